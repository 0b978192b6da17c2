#include "detail/dict_shelf.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "detail/impl_pool.h"
#include "detail/process_switch.h"

namespace mtc::detail::dict_shelf {
namespace {

ProcessSwitch shelf_on;  // MTC_DICT_SHELF

// Use reported of one shape between two settlings, at most (no overflow, however long a stretch
// of copies back to back).
constexpr size_t kMaxReported = size_t{1} << 40;

struct Shape {
  c10::TypePtr key_type;
  c10::TypePtr value_type;
  size_t entries;
  std::vector<c10::impl::GenericDict> spares;
  size_t used = 0;    // reported by the walks since the shelf last settled
  size_t target = 0;  // how many to keep: what one copy used, as last settled
  size_t making = 0;  // being made, outside the lock
};

// A pool's shelf (pools beyond impl_pool's shards share one). Its lock and lists sit on lines of
// their own: the pool's walking threads and the dict-making thread write them, other pools'
// threads never.
struct alignas(128) Shelf {
  std::mutex mutex;
  std::vector<Shape> shapes;
  size_t shelved_entries = 0;   // the entries the spares have room for, all shapes together
  uint64_t copies_settled = 0;  // the pool's copies counted when the shelf last settled
  // Set when a walk took from the shelf or reported use, cleared when a refill found nothing to
  // make: whether the shelf may be short of dicts, for looks without the lock.
  std::atomic<bool> short_of{false};
  std::atomic<uint64_t> restocked{0};

  // The shape's place, made if there is room (a shape with nothing kept and nothing to keep
  // gives its place up), or null.
  Shape* find(const c10::TypePtr& key_type, const c10::TypePtr& value_type, size_t entries) {
    for (Shape& shape : shapes) {
      if (shape.entries == entries && same_type(shape.key_type, key_type) &&
          same_type(shape.value_type, value_type))
        return &shape;
    }
    if (shapes.size() == kMaxShapes) {
      const auto idle = std::find_if(shapes.begin(), shapes.end(), [](const Shape& shape) {
        return shape.spares.empty() && shape.target == 0 && shape.used == 0 && shape.making == 0;
      });
      if (idle == shapes.end()) return nullptr;
      shapes.erase(idle);
    }
    return &shapes.emplace_back(Shape{key_type, value_type, entries, {}, 0, 0, 0});
  }

  // Turns the use reported since the last settling into what to keep, once a copy of the pool
  // started since (or while nothing is kept yet): each shape's use over the pool's copies since
  // (at least one), within a full shelf of the shape. So a stretch of copies back to back, whose
  // use piles up while no pool is idle, asks for one copy's worth, not for the stretch's; and the
  // reports of workers that go idle after the thread began a refill wait for the next settling
  // instead of standing for a copy alone. A shape the walks did not report meanwhile keeps half
  // its target (a report can come a copy late), and its spares beyond twice its target and a grab
  // go to `surplus`, to be freed outside the lock: a shape the walks stopped using gives its
  // dicts back in a few settlings, and then its place. Nothing reported: nothing changes.
  void settle(uint64_t copies_now, std::vector<c10::impl::GenericDict>& surplus) {
    const bool reported = std::any_of(shapes.begin(), shapes.end(),
                                      [](const Shape& shape) { return shape.used > 0; });
    const bool keeping = std::any_of(shapes.begin(), shapes.end(),
                                     [](const Shape& shape) { return shape.target > 0; });
    if (!reported || (copies_now == copies_settled && keeping)) return;
    const uint64_t copies = std::max<uint64_t>(copies_now - copies_settled, 1);
    copies_settled = copies_now;
    for (Shape& shape : shapes) {
      if (shape.used == 0) {
        shape.target /= 2;
        while (shape.spares.size() > 2 * shape.target + kGrab) {
          surplus.push_back(std::move(shape.spares.back()));
          shape.spares.pop_back();
          shelved_entries -= shape.entries;
        }
        continue;
      }
      const size_t per_copy = static_cast<size_t>((shape.used + copies - 1) / copies);
      shape.target = std::min(per_copy, kMaxShelvedEntries / shape.entries);
      shape.used = 0;
    }
  }
};

// Never destroyed: threads may grab while the process exits.
std::array<Shelf, impl_pool::kShards>& shelves() {
  static auto* all = new std::array<Shelf, impl_pool::kShards>();
  return *all;
}

Shelf& shelf_at(size_t shelf) { return shelves()[shelf % impl_pool::kShards]; }

// The thread that makes the dicts of idle pools: one for the process, started on first need,
// never joined (its state is never destroyed, as the shelves).
struct Maker {
  std::mutex mutex;
  std::condition_variable wake;
  std::array<bool, impl_pool::kShards> asked{};  // under mutex
  // The pool's copies when it was last found idle (under mutex): a copy started since stops the
  // thread, also one that started before the thread got round to the shelf.
  std::array<uint64_t, impl_pool::kShards> idle_at{};
  std::array<std::atomic<uint64_t>, impl_pool::kShards> copies{};
  bool started = false;
  // Dicts this thread made, and the times a copy stopped it with the shelf still short
  // (benchmarks).
  std::atomic<uint64_t> made{0};
  std::atomic<uint64_t> cut_short{0};

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock,
                [this] { return std::find(asked.begin(), asked.end(), true) != asked.end(); });
      for (size_t shelf = 0; shelf < asked.size(); ++shelf) {
        if (!asked[shelf]) continue;
        asked[shelf] = false;
        const uint64_t copies_then = idle_at[shelf];
        lock.unlock();
        // Until the shelf has what it keeps, or a copy of its pool starts: the caller frees its
        // previous result beside that copy, and this thread's allocations must not meet it there.
        while (copies[shelf].load(std::memory_order_acquire) == copies_then && make_one(shelf))
          made.fetch_add(1, std::memory_order_relaxed);
        if (wants(shelf)) cut_short.fetch_add(1, std::memory_order_relaxed);
        lock.lock();
      }
    }
  }
};

Maker& maker() {
  static auto* m = new Maker;
  return *m;
}

// The copies started so far of the pool of shelf `shelf`.
std::atomic<uint64_t>& copies_of(size_t shelf) {
  return maker().copies[shelf % impl_pool::kShards];
}

}  // namespace

bool same_type(const c10::TypePtr& a, const c10::TypePtr& b) {
  return a.get() == b.get() || *a == *b;
}

void pool_idle(size_t shelf) noexcept {
  if (!wants(shelf)) return;
  Maker& m = maker();
  try {
    const std::lock_guard<std::mutex> lock(m.mutex);
    if (!m.started) {
      std::thread([&m] { m.run(); }).detach();
      m.started = true;
    }
    m.asked[shelf % impl_pool::kShards] = true;
    m.idle_at[shelf % impl_pool::kShards] = copies_of(shelf).load(std::memory_order_acquire);
  } catch (...) {
    return;  // no thread: the walks make their dicts on the spot
  }
  m.wake.notify_one();
}

uint64_t made_by_thread() { return maker().made.load(std::memory_order_relaxed); }

uint64_t cut_short() { return maker().cut_short.load(std::memory_order_relaxed); }

void copy_started(size_t shelf) noexcept {
  copies_of(shelf).fetch_add(1, std::memory_order_release);
}

size_t grab(size_t shelf, const c10::TypePtr& key_type, const c10::TypePtr& value_type,
            size_t entries, size_t used, size_t most,
            std::vector<c10::impl::GenericDict>& into) noexcept {
  if (!shelf_on.on() || entries == 0) return 0;
  most = std::min(most, kGrab);
  Shelf& s = shelf_at(shelf);
  size_t taken = 0;
  try {
    into.reserve(into.size() + most);
    const std::lock_guard<std::mutex> lock(s.mutex);
    Shape* shape = s.find(key_type, value_type, entries);
    if (shape == nullptr) return 0;
    shape->used = std::min(shape->used + used, kMaxReported);
    while (taken < most && !shape->spares.empty()) {
      into.push_back(std::move(shape->spares.back()));
      shape->spares.pop_back();
      ++taken;
    }
    s.shelved_entries -= taken * entries;
    if (used > 0 || taken > 0) s.short_of.store(true, std::memory_order_relaxed);
  } catch (...) {
  }
  return taken;
}

uint64_t restocks(size_t shelf) noexcept {
  return shelf_at(shelf).restocked.load(std::memory_order_relaxed);
}

bool wants(size_t shelf) noexcept {
  return shelf_at(shelf).short_of.load(std::memory_order_relaxed) && shelf_on.on();
}

bool make_one(size_t shelf) noexcept {
  if (!wants(shelf)) return false;
  Shelf& s = shelf_at(shelf);
  try {
    c10::TypePtr key_type, value_type;
    size_t entries = 0;
    std::vector<c10::impl::GenericDict> surplus;  // freed after the lock is let go
    {
      const std::lock_guard<std::mutex> lock(s.mutex);
      s.settle(copies_of(shelf).load(std::memory_order_acquire), surplus);
      for (Shape& shape : s.shapes) {
        if (shape.spares.size() + shape.making >= shape.target) continue;
        if (s.shelved_entries + shape.entries > kMaxShelvedEntries) continue;  // no room
        ++shape.making;
        key_type = shape.key_type;
        value_type = shape.value_type;
        entries = shape.entries;
        break;
      }
      if (entries == 0) {
        s.short_of.store(false, std::memory_order_relaxed);
        return false;
      }
    }
    // Made outside the lock: the walking threads may take from the shelf meanwhile.
    std::optional<c10::impl::GenericDict> dict;
    try {
      dict.emplace(key_type, value_type);
      dict->reserve(entries);
    } catch (...) {
      dict.reset();
    }
    std::optional<c10::impl::GenericDict> refused;  // freed after the lock is let go
    {
      const std::lock_guard<std::mutex> lock(s.mutex);
      Shape* shape = s.find(key_type, value_type, entries);
      if (shape != nullptr && shape->making > 0) --shape->making;
      if (!dict || shape == nullptr || !shelf_on.on() ||
          s.shelved_entries + entries > kMaxShelvedEntries) {
        if (dict) refused.emplace(std::move(*dict));
      } else {
        shape->spares.push_back(std::move(*dict));
        s.shelved_entries += entries;
        s.restocked.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return dict.has_value();
  } catch (...) {
    return false;
  }
}

void set_enabled(bool on) {
  shelf_on.set(on);
  if (on) return;
  for (Shelf& s : shelves()) {
    std::vector<Shape> gone;
    {
      const std::lock_guard<std::mutex> lock(s.mutex);
      gone.swap(s.shapes);
      s.shelved_entries = 0;
      s.short_of.store(false, std::memory_order_relaxed);
    }
  }
}

void enable_from_environment(bool on) { shelf_on.set_from_environment(on); }

bool enabled() { return shelf_on.on(); }

size_t shelved(size_t shelf) {
  Shelf& s = shelf_at(shelf);
  const std::lock_guard<std::mutex> lock(s.mutex);
  size_t dicts = 0;
  for (const Shape& shape : s.shapes) dicts += shape.spares.size();
  return dicts;
}

size_t kept_target(size_t shelf) {
  Shelf& s = shelf_at(shelf);
  std::vector<c10::impl::GenericDict> surplus;  // freed after the lock is let go
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.settle(copies_of(shelf).load(std::memory_order_acquire), surplus);
  size_t dicts = 0;
  for (const Shape& shape : s.shapes) dicts += shape.target;
  return dicts;
}

}  // namespace mtc::detail::dict_shelf
