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

bool same_type(const c10::TypePtr& a, const c10::TypePtr& b) {
  return a.get() == b.get() || *a == *b;
}

struct Shape {
  c10::TypePtr key_type;
  c10::TypePtr value_type;
  size_t entries;
  std::vector<c10::impl::GenericDict> spares;
  size_t wanted = 0;  // dicts the next refill makes
};

// A pool's shelf. Its lock and lists sit on lines of their own: the pool's walking threads and its
// caller write them, other pools' threads never.
struct alignas(128) Shelf {
  std::mutex mutex;
  std::vector<Shape> shapes;
  size_t shelved_entries = 0;  // the entries the spares have room for, all shapes together
  // The sum of the shapes' wanted, and the restocks, for looks without the lock.
  std::atomic<size_t> wanted_total{0};
  std::atomic<uint64_t> restocked{0};

  // The shape's place, made if there is room (a shape with nothing shelved and nothing wanted
  // gives its place up), or null.
  Shape* find(const c10::TypePtr& key_type, const c10::TypePtr& value_type, size_t entries) {
    for (Shape& shape : shapes) {
      if (shape.entries == entries && same_type(shape.key_type, key_type) &&
          same_type(shape.value_type, value_type))
        return &shape;
    }
    if (shapes.size() == kMaxShapes) {
      const auto idle = std::find_if(shapes.begin(), shapes.end(), [](const Shape& shape) {
        return shape.spares.empty() && shape.wanted == 0;
      });
      if (idle == shapes.end()) return nullptr;
      shapes.erase(idle);
    }
    return &shapes.emplace_back(Shape{key_type, value_type, entries, {}, 0});
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
  std::array<std::atomic<uint64_t>, impl_pool::kShards> copies{};
  bool started = false;
  // Dicts this thread made, and the times a copy stopped it with dicts still wanted (benchmarks).
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
        lock.unlock();
        // Until the shelf has what it wants, or a copy of its pool starts: the caller frees its
        // previous result beside that copy, and this thread's allocations must not meet it there.
        const uint64_t copies_then = copies[shelf].load(std::memory_order_acquire);
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

}  // namespace

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
  } catch (...) {
    return;  // no thread: the walks make their dicts on the spot
  }
  m.wake.notify_one();
}

uint64_t made_by_thread() { return maker().made.load(std::memory_order_relaxed); }

uint64_t cut_short() { return maker().cut_short.load(std::memory_order_relaxed); }

void copy_started(size_t shelf) noexcept {
  maker().copies[shelf % impl_pool::kShards].fetch_add(1, std::memory_order_release);
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
    // Never more wanted than a full shelf of the shape holds.
    const size_t room = kMaxShelvedEntries / entries;
    const size_t wanted =
        std::min(shape->wanted + used, room - std::min(room, shape->spares.size()));
    if (wanted >= shape->wanted) {
      s.wanted_total.fetch_add(wanted - shape->wanted, std::memory_order_relaxed);
    } else {
      s.wanted_total.fetch_sub(shape->wanted - wanted, std::memory_order_relaxed);
    }
    shape->wanted = wanted;
    while (taken < most && !shape->spares.empty()) {
      into.push_back(std::move(shape->spares.back()));
      shape->spares.pop_back();
      ++taken;
    }
    s.shelved_entries -= taken * entries;
  } catch (...) {
  }
  return taken;
}

uint64_t restocks(size_t shelf) noexcept {
  return shelf_at(shelf).restocked.load(std::memory_order_relaxed);
}

bool wants(size_t shelf) noexcept {
  return shelf_at(shelf).wanted_total.load(std::memory_order_relaxed) > 0 && shelf_on.on();
}

bool make_one(size_t shelf) noexcept {
  if (!wants(shelf)) return false;
  Shelf& s = shelf_at(shelf);
  try {
    c10::TypePtr key_type, value_type;
    size_t entries = 0;
    {
      const std::lock_guard<std::mutex> lock(s.mutex);
      for (Shape& shape : s.shapes) {
        if (shape.wanted == 0) continue;
        if (s.shelved_entries + shape.entries > kMaxShelvedEntries) {
          // No room for one more: what the shape wanted is dropped, and counted again later.
          s.wanted_total.fetch_sub(shape.wanted, std::memory_order_relaxed);
          shape.wanted = 0;
          continue;
        }
        --shape.wanted;
        s.wanted_total.fetch_sub(1, std::memory_order_relaxed);
        key_type = shape.key_type;
        value_type = shape.value_type;
        entries = shape.entries;
        break;
      }
    }
    if (entries == 0) return false;
    // Made outside the lock: the walking threads may take from the shelf meanwhile.
    c10::impl::GenericDict dict(key_type, value_type);
    dict.reserve(entries);
    std::optional<c10::impl::GenericDict> refused;  // freed after the lock is let go
    {
      const std::lock_guard<std::mutex> lock(s.mutex);
      Shape* shape = s.find(key_type, value_type, entries);
      if (shape == nullptr || !shelf_on.on() || s.shelved_entries + entries > kMaxShelvedEntries) {
        refused.emplace(std::move(dict));
      } else {
        shape->spares.push_back(std::move(dict));
        s.shelved_entries += entries;
        s.restocked.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return true;
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
      s.wanted_total.store(0, std::memory_order_relaxed);
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

size_t wanted(size_t shelf) { return shelf_at(shelf).wanted_total.load(std::memory_order_relaxed); }

}  // namespace mtc::detail::dict_shelf
