#include "detail/dict_stash.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "detail/dict_shelf.h"
#include "detail/impl_pool.h"
#include "detail/process_switch.h"

namespace mtc::detail::dict_stash {
namespace {

ProcessSwitch stash_on;  // MTC_DICT_STASH

bool on() { return stash_on.on(); }

c10::impl::GenericDict make(const c10::TypePtr& key_type, const c10::TypePtr& value_type,
                            size_t entries) {
  c10::impl::GenericDict dict(key_type, value_type);
  dict.reserve(entries);
  return dict;
}

// Dicts handed out made ahead, by thread; a thread's count outlives the thread, so that the total
// stays a total. Each thread writes only its own.
struct ServedCount {
  std::atomic<uint64_t> dicts{0};
};
std::mutex served_mutex;
std::vector<std::shared_ptr<ServedCount>>& served_counts() {
  static auto* counts = new std::vector<std::shared_ptr<ServedCount>>();  // never destroyed
  return *counts;
}

constexpr uint64_t kNotDry = ~uint64_t{0};

// Dicts of one shape, and how many the thread's walks took since its last complete refill.
struct Shape {
  c10::TypePtr key_type;
  c10::TypePtr value_type;
  size_t entries;
  std::vector<c10::impl::GenericDict> spares;
  size_t taken = 0;
  // With the shelf (dict_shelf.h): taken since the thread last reported to it, and the shelf's
  // restocks when the thread last found it empty (kNotDry: it did not).
  size_t unreported = 0;
  uint64_t dry_at = kNotDry;
};

// The calling thread's dicts; freed with the thread.
struct Stash {
  std::vector<Shape> shapes;
  size_t spare_entries = 0;  // the entries the spares have room for, all shapes together
  // Set by the thread's first refill: a thread that never refills (a caller walking part of its
  // copy) makes its dicts on the spot without looking here, unless the dict shelf is on
  // (dict_shelf.h): then it takes from the shelf as the workers do.
  bool refills = false;
  std::shared_ptr<ServedCount> served;

  Shape* find(const c10::TypePtr& key_type, const c10::TypePtr& value_type, size_t entries) {
    for (Shape& shape : shapes) {
      if (shape.entries == entries && dict_shelf::same_type(shape.key_type, key_type) &&
          dict_shelf::same_type(shape.value_type, value_type))
        return &shape;
    }
    if (shapes.size() == kMaxShapes) return nullptr;
    return &shapes.emplace_back(Shape{key_type, value_type, entries, {}, 0, 0, kNotDry});
  }

  void clear() {
    shapes.clear();
    spare_entries = 0;
  }
};

thread_local Stash t_stash;

// Counts one more dict handed out made ahead.
void count_served(Stash& stash) {
  if (stash.served == nullptr) {
    auto served = std::make_shared<ServedCount>();
    const std::lock_guard<std::mutex> lock(served_mutex);
    served_counts().push_back(served);
    stash.served = std::move(served);
  }
  stash.served->dicts.store(stash.served->dicts.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
}

// With the shelf on and none of the shape kept: takes a few from the pool's shelf (dict_shelf.h),
// reporting what the thread used, unless it found the shelf empty last time and neither was it
// restocked since nor has the thread used kGrab more.
void grab_from_shelf(Stash& stash, Shape& shape) {
  const size_t shelf = impl_pool::thread_shard();
  const uint64_t restocks = dict_shelf::restocks(shelf);
  if (shape.dry_at == restocks && shape.unreported < dict_shelf::kGrab) return;
  const size_t room = (kMaxSpareEntries - stash.spare_entries) / std::max<size_t>(shape.entries, 1);
  const size_t got =
      dict_shelf::grab(shelf, shape.key_type, shape.value_type, shape.entries, shape.unreported,
                       std::min(room, dict_shelf::kGrab), shape.spares);
  shape.unreported = 0;
  stash.spare_entries += got * shape.entries;
  shape.dry_at = got == 0 ? restocks : kNotDry;
}

}  // namespace

c10::impl::GenericDict take(const c10::TypePtr& key_type, const c10::TypePtr& value_type,
                            size_t entries) {
  Stash& stash = t_stash;
  const bool shelf = dict_shelf::enabled();
  if ((!stash.refills && !shelf) || entries > kMaxEntries || !on())
    return make(key_type, value_type, entries);
  Shape* shape = stash.find(key_type, value_type, entries);
  if (shape == nullptr) return make(key_type, value_type, entries);
  shape->taken = std::min(shape->taken + 1, kMaxSpareEntries / std::max<size_t>(entries, 1));
  ++shape->unreported;
  if (shape->spares.empty() && shelf) grab_from_shelf(stash, *shape);
  if (shape->spares.empty()) return make(key_type, value_type, entries);
  // c10::Dict has no move constructor: this copies the reference, and pop_back drops the
  // stash's, so the dict is the caller's alone.
  c10::impl::GenericDict dict = shape->spares.back();
  shape->spares.pop_back();
  stash.spare_entries -= entries;
  count_served(stash);
  return dict;
}

size_t refill(c10::function_ref<bool()> stop) noexcept {
  size_t made = 0;
  // A worker runs this outside any task, where an exception would end the process; memory
  // running out leaves the walk to allocate as it would without the stash.
  try {
    Stash& stash = t_stash;
    if (!on()) {
      // Turned off: the memory goes back, one dict at a time, as a refill makes them: up to 4,096
      // frees (kMaxSpareEntries dicts of one entry) would otherwise keep a queued task waiting.
      for (Shape& shape : stash.shapes) {
        while (!shape.spares.empty()) {
          if (stop()) return 0;
          shape.spares.pop_back();
          stash.spare_entries -= shape.entries;
        }
      }
      stash.clear();
      return 0;
    }
    stash.refills = true;
    // With the shelf on, the dict-making thread makes the dicts (dict_shelf.h): none here. What
    // the thread used and has not reported yet is reported now, before the pool's idle workers
    // wake that thread (worker_pool.cpp): it then makes what the walks just used.
    const bool shelf = dict_shelf::enabled();
    for (Shape& shape : stash.shapes) {
      if (shelf) {
        shape.taken = 0;
        if (shape.unreported > 0) {
          std::vector<c10::impl::GenericDict> none;
          dict_shelf::grab(impl_pool::thread_shard(), shape.key_type, shape.value_type,
                           shape.entries, shape.unreported, 0, none);
        }
      }
      shape.unreported = 0;
      while (shape.spares.size() < shape.taken &&
             stash.spare_entries + shape.entries <= kMaxSpareEntries) {
        // Demand not met stays counted: the next refill goes on from here.
        if (stop()) return made;
        shape.spares.push_back(make(shape.key_type, shape.value_type, shape.entries));
        stash.spare_entries += shape.entries;
        ++made;
      }
      shape.taken = 0;
    }
    // A shape with nothing kept and nothing taken since the last refill frees its place.
    std::erase_if(stash.shapes, [](const Shape& shape) { return shape.spares.empty(); });
  } catch (...) {
  }
  return made;
}

void set_enabled(bool enable) { stash_on.set(enable); }

void enable_from_environment(bool enable) { stash_on.set_from_environment(enable); }

bool enabled() { return on(); }

size_t thread_spares() {
  size_t spares = 0;
  for (const Shape& shape : t_stash.shapes) spares += shape.spares.size();
  return spares;
}

uint64_t served_total() {
  const std::lock_guard<std::mutex> lock(served_mutex);
  uint64_t total = 0;
  for (const auto& count : served_counts()) total += count->dicts.load(std::memory_order_relaxed);
  return total;
}

}  // namespace mtc::detail::dict_stash
