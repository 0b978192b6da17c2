#include "detail/key_interner.h"

#include <algorithm>
#include <atomic>
#include <string_view>
#include <unordered_map>

namespace mtc::detail::key_interner {
namespace {

using c10::ivalue::ConstantString;

std::atomic<bool> interning_on{true};

// Set once the thread's table is gone (thread exit): keys are then shared with the input. A plain
// thread-local, usable after the table's destruction.
thread_local bool t_exited = false;

// The calling thread's strings by their text (a view of the string's own characters, which live
// as long as the table's reference).
class Table {
 public:
  Table() = default;
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  // The unspent advance and the table's own reference go; each string stays while an output
  // dict holds it.
  ~Table() {
    t_exited = true;
    for (auto& [text, kept] : strings_) {
      for (uint32_t i = 0; i < kept.prepaid; ++i)
        c10::intrusive_ptr<ConstantString>::reclaim(kept.string);
      c10::intrusive_ptr<ConstantString>::reclaim(kept.string);
    }
  }

  // A new reference to this thread's string of `text`, or null when the table cannot keep one.
  ConstantString* take(std::string_view text) {
    auto it = strings_.find(text);
    if (it == strings_.end()) {
      if (strings_.size() >= kMaxStrings) return nullptr;
      // The table's reference, released in the destructor; owned here until the table holds it.
      c10::intrusive_ptr<ConstantString> owned = ConstantString::create(text);
      it = strings_.emplace(owned->string_view(), Kept{owned.get(), 0, 1}).first;
      (void)owned.release();
    }
    Kept& kept = it->second;
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
    ConstantString* string;  // the table's reference and `prepaid` more
    uint32_t prepaid;        // references counted and not yet handed out
    uint32_t advance;        // how many the next refill counts
  };
  std::unordered_map<std::string_view, Kept> strings_;
};

thread_local Table t_table;

}  // namespace

c10::IValue output_key(const c10::IValue& key) {
  if (!key.isString() || !interning_on.load(std::memory_order_relaxed)) return key;
  const std::string_view text = key.toStringView();
  if (text.size() > kMaxKeyBytes || t_exited) return key;
  ConstantString* string = t_table.take(text);
  if (string == nullptr) return key;
  // The reference take() handed over, without counting it again.
  return c10::IValue(c10::intrusive_ptr<ConstantString>::reclaim(string));
}

void set_enabled(bool on) { interning_on.store(on, std::memory_order_relaxed); }

bool enabled() { return interning_on.load(std::memory_order_relaxed); }

size_t thread_strings() { return t_exited ? 0 : t_table.size(); }

}  // namespace mtc::detail::key_interner
