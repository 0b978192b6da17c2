#include "detail/key_interner.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace mtc::detail::key_interner {
namespace {

using c10::ivalue::ConstantString;

std::atomic<bool> interning_on{true};

// Set once the thread's table is gone (thread exit): keys are then shared with the input. A plain
// thread-local, usable after the table's destruction.
thread_local bool t_exited = false;

std::atomic<uint32_t> generation{0};
std::atomic<bool> alternating_on{true};

// Hashes a key's text, so that the table finds a string_view without making a std::string.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

// The calling thread's strings by their text, one for each generation met (next_generation()).
// The text is the table's own copy: a lookup never reads a string's object, whose count the
// thread freeing an older result keeps changing.
class Table {
 public:
  Table() = default;
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  // The unspent advance and the table's own reference go; each string stays while an output
  // dict holds it.
  ~Table() {
    t_exited = true;
    for (auto& [text, entry] : strings_) {
      for (Kept& kept : entry) {
        if (kept.string == nullptr) continue;
        for (uint32_t i = 0; i < kept.prepaid; ++i)
          c10::intrusive_ptr<ConstantString>::reclaim(kept.string);
        c10::intrusive_ptr<ConstantString>::reclaim(kept.string);
      }
    }
  }

  // A new reference to this thread's string of `text` of generation `g` (0 or 1), or null when
  // the table cannot keep one.
  ConstantString* take(std::string_view text, size_t g) {
    auto it = strings_.find(text);
    if (it == strings_.end()) {
      if (strings_.size() >= kMaxStrings) return nullptr;
      it = strings_.emplace(std::string(text), Entry{}).first;
    }
    Kept& kept = it->second[g];
    if (kept.string == nullptr) {
      // The table's reference, released in the destructor.
      kept.string = ConstantString::create(text).release();
    }
    if (kept.prepaid == 0) {
      // Counted back to back on a line this thread now holds: one transfer for the whole advance.
      // The advance doubles from 1, so a key met once costs one count, as a shared one did.
      for (uint32_t i = 0; i < kept.advance; ++i) c10::raw::intrusive_ptr::incref(kept.string);
      kept.prepaid = kept.advance;
      kept.advance = std::min(2 * kept.advance, kPrepaid);
    }
    --kept.prepaid;
    return kept.string;
  }

  size_t size() const { return strings_.size(); }

 private:
  struct Kept {
    ConstantString* string = nullptr;  // the table's reference and `prepaid` more
    uint32_t prepaid = 0;              // references counted and not yet handed out
    uint32_t advance = 1;              // how many the next refill counts
  };
  using Entry = std::array<Kept, 2>;
  std::unordered_map<std::string, Entry, TextHash, std::equal_to<>> strings_;
};

thread_local Table t_table;

}  // namespace

c10::IValue output_key(const c10::IValue& key) {
  if (!key.isString() || !interning_on.load(std::memory_order_relaxed)) return key;
  const std::string_view text = key.toStringView();
  if (text.size() > kMaxKeyBytes || t_exited) return key;
  const size_t g = alternating_on.load(std::memory_order_relaxed)
                       ? generation.load(std::memory_order_relaxed) & 1
                       : 0;
  ConstantString* string = t_table.take(text, g);
  if (string == nullptr) return key;
  // The reference take() handed over, without counting it again.
  return c10::IValue(c10::intrusive_ptr<ConstantString>::reclaim(string));
}

void set_enabled(bool on) { interning_on.store(on, std::memory_order_relaxed); }

bool enabled() { return interning_on.load(std::memory_order_relaxed); }

void next_generation() { generation.fetch_add(1, std::memory_order_relaxed); }

void set_alternating(bool on) { alternating_on.store(on, std::memory_order_relaxed); }

bool alternating() { return alternating_on.load(std::memory_order_relaxed); }

size_t thread_strings() { return t_exited ? 0 : t_table.size(); }

}  // namespace mtc::detail::key_interner
