#include "detail/dict_stash.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <utility>
#include <vector>

#include "detail/worker_pool_set.h"

namespace mtc::detail::dict_stash {
namespace {

// -1 until MTC_DICT_STASH was read (at the first use) or set_enabled() was called.
std::atomic<int> stash_on{-1};

bool on() {
  int state = stash_on.load(std::memory_order_relaxed);
  if (state >= 0) return state == 1;
  const int from_environment = parse_dict_stash(std::getenv(kDictStashVariable), false) ? 1 : 0;
  // A set_enabled() meanwhile wins.
  stash_on.compare_exchange_strong(state, from_environment, std::memory_order_relaxed);
  return stash_on.load(std::memory_order_relaxed) == 1;
}

c10::impl::GenericDict make(const c10::TypePtr& key_type, const c10::TypePtr& value_type,
                            size_t entries) {
  c10::impl::GenericDict dict(key_type, value_type);
  dict.reserve(entries);
  return dict;
}

bool same_type(const c10::TypePtr& a, const c10::TypePtr& b) {
  return a.get() == b.get() || *a == *b;
}

// Dicts of one shape, and how many the thread's walks took since its last complete refill.
struct Shape {
  c10::TypePtr key_type;
  c10::TypePtr value_type;
  size_t entries;
  std::vector<c10::impl::GenericDict> spares;
  size_t taken = 0;
};

// The calling thread's dicts; freed with the thread.
struct Stash {
  std::vector<Shape> shapes;
  size_t spares = 0;

  Shape* find(const c10::TypePtr& key_type, const c10::TypePtr& value_type, size_t entries) {
    for (Shape& shape : shapes) {
      if (shape.entries == entries && same_type(shape.key_type, key_type) &&
          same_type(shape.value_type, value_type))
        return &shape;
    }
    if (shapes.size() == kMaxShapes) return nullptr;
    return &shapes.emplace_back(Shape{key_type, value_type, entries, {}, 0});
  }
};

thread_local Stash t_stash;

}  // namespace

c10::impl::GenericDict take(const c10::TypePtr& key_type, const c10::TypePtr& value_type,
                            size_t entries) {
  if (entries > kMaxEntries || !on()) return make(key_type, value_type, entries);
  Stash& stash = t_stash;
  Shape* shape = stash.find(key_type, value_type, entries);
  if (shape == nullptr) return make(key_type, value_type, entries);
  shape->taken = std::min(shape->taken + 1, kMaxSpares);
  if (shape->spares.empty()) return make(key_type, value_type, entries);
  // c10::Dict has no move constructor: this copies the reference, and pop_back drops the
  // stash's, so the dict is the caller's alone.
  c10::impl::GenericDict dict = shape->spares.back();
  shape->spares.pop_back();
  --stash.spares;
  return dict;
}

size_t refill(c10::function_ref<bool()> stop) noexcept {
  size_t made = 0;
  // A worker runs this outside any task, where an exception would end the process: a bad
  // MTC_DICT_STASH fails the next copy's walk instead (take()), and memory running out leaves the
  // walk to allocate as it would without the stash.
  try {
    if (!on()) return 0;
    Stash& stash = t_stash;
    for (Shape& shape : stash.shapes) {
      while (shape.spares.size() < shape.taken && stash.spares < kMaxSpares) {
        // Demand not met stays counted: the next refill goes on from here.
        if (stop()) return made;
        shape.spares.push_back(make(shape.key_type, shape.value_type, shape.entries));
        ++stash.spares;
        ++made;
      }
      shape.taken = 0;
    }
  } catch (...) {
  }
  return made;
}

void set_enabled(bool enable) { stash_on.store(enable ? 1 : 0, std::memory_order_relaxed); }

bool enabled() { return on(); }

size_t thread_spares() { return t_stash.spares; }

}  // namespace mtc::detail::dict_stash
