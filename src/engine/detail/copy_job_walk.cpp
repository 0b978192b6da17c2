// CopyJob's walk of the input: on the job's thread alone for small structures, or in parts
// (root elements handed out one at a time) by pool workers and a caller waiting in get() for
// large ones. The rest of the job is in copy_job.cpp.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "detail/copy_job.h"
#include "detail/leaf_router.h"
#include "detail/routes.h"
#include "detail/structure.h"
#include "detail/worker_pool.h"
#include "mtc/nvtx.h"

namespace mtc::detail {
namespace {
std::atomic<int64_t> parallel_walk_leaves{kDefaultParallelWalkLeaves};
std::atomic<int64_t> leaves_per_part{kDefaultLeavesPerPart};
std::atomic<bool> early_split{true};

// How the last copy through each pool (by id, modulo the array's size) split its walk, by the
// length of its root: a training loop copies a structure of the same shape every step, and the
// next copy of a root that long then queues as many helpers before it walks its first element.
// Otherwise that element, walked first, decides the split, and the helpers start an element
// late. An entry holds the root's length (32 bits), the split settings' generation (16) and the
// helpers (16; 0: not split).
std::array<std::atomic<uint64_t>, 16> last_split{};
std::atomic<uint64_t> settings_generation{0};

uint64_t split_entry(int64_t elements, int64_t helpers) {
  return (static_cast<uint64_t>(elements) << 32) |
         ((settings_generation.load(std::memory_order_relaxed) & 0xffff) << 16) |
         static_cast<uint64_t>(helpers);
}
std::atomic<uint64_t>& split_slot(const WorkerPool& pool) {
  return last_split[static_cast<size_t>(pool.id()) % last_split.size()];
}
}  // namespace

void set_parallel_walk(int64_t min_leaves, int64_t leaves_per_part_) {
  const int64_t per_part = std::max<int64_t>(1, leaves_per_part_);
  // Settings set to what they are change nothing (a benchmark may set them before every copy).
  const bool min_changed = parallel_walk_leaves.exchange(min_leaves) != min_leaves;
  const bool per_part_changed = leaves_per_part.exchange(per_part) != per_part;
  if (min_changed || per_part_changed)
    settings_generation.fetch_add(1);  // what the pools remember no longer holds
}

void set_early_split(bool on) { early_split.store(on); }

int64_t remembered_helpers(const WorkerPool& pool, int64_t elements) {
  if (!early_split.load(std::memory_order_relaxed) || elements < 3 || elements >= (1LL << 32))
    return 0;
  const uint64_t entry = split_slot(pool).load(std::memory_order_relaxed);
  // An entry of 0 helpers matches only itself: not split, nothing to queue.
  const uint64_t helpers = entry & 0xffff;
  return entry == split_entry(elements, static_cast<int64_t>(helpers))
             ? static_cast<int64_t>(helpers)
             : 0;
}

void remember_split(const WorkerPool& pool, int64_t elements, int64_t helpers) {
  if (elements >= (1LL << 32)) return;
  split_slot(pool).store(split_entry(elements, std::clamp<int64_t>(helpers, 0, 0xffff)),
                         std::memory_order_relaxed);
}

// Hands out the root elements of a split walk, one at a time, to whichever thread asks next.
// Shared with the helper tasks and with callers waiting in get(), which may come after the walk
// is over (a worker that woke late): such a thread gets no element and touches nothing but
// this object.
struct ElementTickets {
  ElementTickets(int64_t n, int max_threads) : elements(n), threads(max_threads) {}
  // The next element to walk; `elements` or more once none is left (or a thread failed).
  int64_t take() { return stop.load(std::memory_order_relaxed) ? elements : next.fetch_add(1); }
  // A thread other than the walk's own walks elements, as long as there are any and a walker
  // slot is free for it.
  void join() {
    active.fetch_add(1);
    if (const int slot = slots.fetch_add(1); slot < threads) {
      if (const int64_t i = take(); i < elements) (*walk)(slot, i);
    }
    // Both sequentially consistent, as the walk's thread's store of walk_sleeps and load of
    // `active` before it sleeps: either this thread sees it asleep, or it sees this decrement.
    active.fetch_sub(1);
    if (walk_sleeps.load()) active.notify_all();
  }
  // For the walk's own thread: returns once no joined thread is active, calling `on_look` at
  // each look. They usually finish within microseconds of it, so it spins until `spin_until`.
  // But one may wait for an element of a fed root that the feeder is slow to put (Python code
  // in the binding's walk, a garbage collection), for any time: then it sleeps, woken each time
  // a joined thread is done.
  template <typename OnLook>
  void wait_idle(std::chrono::steady_clock::time_point spin_until, const OnLook& on_look) {
    for (;;) {
      const int seen = active.load();
      if (seen == 0) return;
      on_look();
      if (std::chrono::steady_clock::now() < spin_until) {
        cpu_relax();
      } else if (!walk_sleeps.load(std::memory_order_relaxed)) {
        walk_sleeps.store(true);  // then looks at `active` once more before sleeping
      } else {
        active.wait(seen);
      }
    }
  }
  // No element is handed out after this. A thread that holds one counted itself in `active`
  // before taking it, so the walk sees it there after closing.
  void close() { next.fetch_add(elements); }

  const int64_t elements;
  const int threads;             // walker slots; slot 0 is the walk's own thread
  std::atomic<int64_t> next{1};  // element 0 is walked before the split is decided
  std::atomic<int> active{0};    // joined threads between asking for an element and being done
  std::atomic<int> slots{1};
  std::atomic<bool> stop{false};  // a thread failed: the others stop early
  // Set once the walk's thread goes to sleep in wait_idle; until then a joined thread that is
  // done wakes nobody, at no cost.
  std::atomic<bool> walk_sleeps{false};
  std::thread::id feeder;  // a fed root's feeding thread, which never joins
  const std::function<void(int, int64_t)>* walk =
      nullptr;  // (slot, first element); valid while open
};

void CopyJob::walk() {
  MTC_RANGE(traverse, "traverse");
  using Copier = StructureCopier<LeafRouter>;
  stats_.walk_threads = 1;
  if (!Copier::is_container(input_)) {
    Copier(router_).copy(input_, result_);
    return;
  }
  // The root's elements are copied one by one and the root assembled around them. The first
  // element tells how large the structure probably is. A large one is walked by several
  // threads, each with its own router (its own chunks, so threads do not share a storage's
  // reference count), taking the elements one at a time in order: the walk's thread starts at
  // once, pool workers join as they wake up (one that wakes late costs nothing) and so does a
  // caller waiting in get().
  const std::vector<const c10::IValue*> elements = Copier::elements_of(input_);
  const auto n = static_cast<int64_t>(elements.size());
  std::vector<c10::IValue> built(static_cast<size_t>(n));
  Copier first(router_);
  // The helpers the split wants for `leaves` in all (fewer than one: no split).
  const auto helpers_for = [&](int64_t leaves) {
    if (leaves < parallel_walk_leaves.load(std::memory_order_relaxed)) return int64_t{0};
    return std::max<int64_t>(
        0, std::min<int64_t>({static_cast<int64_t>(pool_.size()), n - 2,
                              leaves / leaves_per_part.load(std::memory_order_relaxed) - 1}));
  };
  // A root as long as the pool's last copy's is split as that one was, unless it is fed: its
  // helpers would wait for elements the feeder has yet to put, and from Python that made the
  // feeder's own walk slower by about as much as it shortened the engine's (1 x H200,
  // results/notes/2026-12-03-late.md).
  int64_t helpers = feed_ ? 0 : std::min<int64_t>(remembered_helpers(pool_, n), pool_.size());
  const bool first_walked = helpers < 1;  // else the walk's own thread takes element 0 below
  if (first_walked) {
    if (n > 0) {
      wait_for_element(0);
      built[0] = first.copy_element(*elements[0], 0);
    }
    helpers = helpers_for(stats_.tensors * n);  // the first element's leaves, n times
    if (helpers < 1) {
      for (int64_t i = 1; i < n; ++i) {
        wait_for_element(i);
        built[i] = first.copy_element(*elements[i], static_cast<uint32_t>(i));
      }
      result_ = Copier::assemble(input_, built);
      first.place_elements(result_);
      remember_split(pool_, n, 0);
      return;
    }
  }

  // Each thread also stages its own chunks once no element is left, overlapping the others'
  // walks; the walk's thread queues their DMAs. Each thread's objects sit on cache lines of their
  // own: routers write their counts and vectors at every leaf.
  struct NoLeaves {  // submissions route no single leaf
    std::vector<at::Tensor> inputs, outputs;
    std::vector<DeferredView> views;
    std::vector<c10::Storage> storages;
  } none;
  struct alignas(128) Walker {
    Walker(CopyJob& job, NoLeaves& no, CopyStats* stats_to_use)
        : context{job.options_,
                  job.target_,
                  no.inputs,
                  no.outputs,
                  no.views,
                  no.storages,
                  stats_to_use ? *stats_to_use : own_stats,
                  completion,
                  job.streams_} {}
    CopyStats own_stats;
    std::optional<LeafRouter> own_router;  // a helper's; the walk's thread uses router_
    std::optional<Copier> own_copier;
    LeafRouter* router = nullptr;
    Copier* copier = nullptr;
    Completion completion;            // what the thread's staging holds
    std::atomic<bool> staged{false};  // its chunks are staged, for the walk's thread to queue
    bool queued = false;
    RouteContext context;
    std::exception_ptr error;
    int64_t error_element = 0;
    int64_t walked = 0;  // root elements
    // For the split's timings (CopyStats::split_join_us and after): when the thread took its
    // first element, ended its walk and ended its staging, and the leaves it had walked before.
    std::chrono::steady_clock::time_point first_at, walked_at, staged_at;
    int64_t leaves_before = 0;
  };
  // One walker per helper, one for a caller that waits in get() and joins, and the walk's own.
  // Made before any other thread joins, so a joining thread cannot fail outside walk_from.
  std::vector<std::unique_ptr<Walker>> walkers;
  for (int64_t k = 0; k <= helpers + 1; ++k) {
    Walker& w =
        *walkers.emplace_back(std::make_unique<Walker>(*this, none, k == 0 ? &stats_ : nullptr));
    w.router =
        k == 0 ? &router_ : &w.own_router.emplace(target_, options_, w.own_stats, reuse_.get());
    w.copier = k == 0 ? &first : &w.own_copier.emplace(*w.router);
  }
  const auto tickets = std::make_shared<ElementTickets>(n, static_cast<int>(walkers.size()));
  if (feed_) tickets->feeder = feed_->feeder();
  // Walks elements from `i` on, as long as there are any; a failing thread records its error
  // and stops. The error reported is the one of the earliest element, whichever thread failed
  // first in time: every element before a failed one has been handed out and is walked, so
  // the message does not vary from run to run (within an element, the first bad leaf fails).
  auto walk_from = [&](Walker& w, int64_t i) {
    w.leaves_before = w.context.stats.tensors;
    w.first_at = std::chrono::steady_clock::now();
    w.walked_at = w.first_at;
    w.staged_at = w.first_at;
    try {
      for (; i < n; i = tickets->take()) {
        w.error_element = i;
        ++w.walked;
        wait_for_element(i);
        w.router->begin_element(i);
        built[static_cast<size_t>(i)] =
            w.copier->copy_element(*elements[i], static_cast<uint32_t>(i));
      }
      w.walked_at = std::chrono::steady_clock::now();
      w.staged_at = w.walked_at;
      // Nothing is staged for a copy that has failed. Pageable staging (pinned staging off)
      // makes each DMA a synchronous copy by the driver, on the thread that queues it: each
      // thread still queues its own then.
      if (pack_submitted_in_walk() && !tickets->stop.load(std::memory_order_relaxed)) {
        if (options_.use_pinned_staging) {
          stage_packed_host_to_device(w.context, w.router->packed());
          w.staged.store(true, std::memory_order_release);
        } else {
          submit_packed_host_to_device(w.context, w.router->packed());
        }
        w.staged_at = std::chrono::steady_clock::now();
      }
    } catch (...) {
      w.error = std::current_exception();
      tickets->stop.store(true, std::memory_order_relaxed);
    }
  };
  const std::function<void(int, int64_t)> join = [&](int slot, int64_t i) {
    const std::optional<c10::InferenceMode> inference = inference_guard();
    walk_from(*walkers[static_cast<size_t>(slot)], i);
  };
  tickets->walk = &join;
  {
    std::lock_guard<std::mutex> lock(walk_mutex_);
    open_walk_ = tickets;
  }
  walk_open_.store(true, std::memory_order_release);
  // A helper task that the feeder of a fed root pops (helping with pool work in a get() that
  // Python code in its walk called) would wait for elements that thread has yet to put: it
  // leaves the walk to the others. The task holds nothing of the feed: a late one, destroyed on
  // a worker, must not drop the last reference to the root's tensors (copier.cpp, release_here).
  // Once open, the walk is closed before this frame goes, whatever happens: helper tasks already
  // queued, and callers in get(), reach `join` and the walkers through the tickets.
  const auto close_walk = [&] {
    tickets->close();
    walk_open_.store(false, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(walk_mutex_);
    open_walk_.reset();
  };
  try {
    pool_.submit_copies(
        [tickets] {
          if (std::this_thread::get_id() != tickets->feeder) tickets->join();
        },
        static_cast<int>(helpers));
  } catch (...) {
    // Some helpers may be queued (an allocation failed part way): they must find no element, and
    // a thread that took one must be done with it, before the walkers die with this frame.
    close_walk();
    tickets->wait_idle(std::chrono::steady_clock::now() + WorkerPool::kDefaultSpin, [] {});
    throw;
  }
  // Element 0 is this thread's (the tickets start at 1): walked already, or taken first now.
  const auto opened = std::chrono::steady_clock::now();
  walk_from(*walkers[0], first_walked ? tickets->take() : 0);
  const auto own_done = std::chrono::steady_clock::now();
  close_walk();
  // The walk's thread queues every thread's DMAs, each as soon as its staging is filled: one
  // thread calling the driver never waits for another there. None once the copy has failed; a
  // failure here is reported after any leaf's (its element: n).
  const auto queue_staged = [&] {
    for (const auto& w : walkers) {
      if (w->queued || !w->staged.load(std::memory_order_acquire)) continue;
      w->queued = true;
      if (tickets->stop.load(std::memory_order_relaxed)) continue;
      try {
        const auto start = std::chrono::steady_clock::now();
        queue_packed_host_to_device(w->context, w->router->packed());
        stats_.split_queue_us += micros_between(start, std::chrono::steady_clock::now());
      } catch (...) {
        if (!w->error) {
          w->error = std::current_exception();
          w->error_element = n;
        }
        tickets->stop.store(true, std::memory_order_relaxed);
      }
    }
  };
  // Spinning as long as an idle worker does by default: a sleep and wake-up would cost more
  // than the usual wait.
  tickets->wait_idle(own_done + WorkerPool::kDefaultSpin, [&] {
    if (pack_submitted_in_walk()) queue_staged();
  });
  stats_.split_wait_us = micros_between(own_done, std::chrono::steady_clock::now());
  if (pack_submitted_in_walk()) queue_staged();
  // The threads' staging, which queued DMAs may still read, goes to the job's completion, which
  // the failure path waits for after synchronizing the streams.
  // Storages that reused outputs let go of are freed with the job, on the caller's thread: taken
  // into the job's router before anything below can fail and destroy the walkers here.
  {
    double walking_ns = 0;
    int64_t leaves = 0;
    for (const auto& w : walkers) {
      if (w->walked == 0) continue;
      stats_.split_join_us = std::max(stats_.split_join_us, micros_between(opened, w->first_at));
      stats_.split_stage_us =
          std::max(stats_.split_stage_us, micros_between(w->walked_at, w->staged_at));
      walking_ns += 1e3 * micros_between(w->first_at, w->walked_at);
      leaves += w->context.stats.tensors - w->leaves_before;
    }
    if (leaves > 0) stats_.split_leaf_ns = walking_ns / static_cast<double>(leaves);
  }
  const Walker* failed = nullptr;
  for (const auto& w : walkers) {
    // The helpers' staging and queuing (the walk's own thread's counts in stats_ already).
    if (w != walkers.front()) {
      stats_.allocate_us += w->own_stats.allocate_us;
      stats_.driver_us += w->own_stats.driver_us;
    }
    completion_.absorb(w->completion);
    if (w->router != &router_) router_.absorb_released_storages(*w->router);
    if (w->error && (!failed || w->error_element < failed->error_element)) failed = w.get();
  }
  if (failed) std::rethrow_exception(failed->error);
  result_ = Copier::assemble(input_, built);
  stats_.walk_threads = 0;
  for (const auto& w : walkers) {
    // The walk's own thread walked element 0 before the split, even if the others then took
    // every element after it: its copier holds that element's deferred children.
    if (w->walked == 0 && w != walkers.front()) continue;
    ++stats_.walk_threads;
    w->copier->place_elements(result_);
    if (w->router != &router_) router_.absorb(*w->router);
  }
  split_ = true;
  // Every thread's leaves now counted: what the next copy of a root this long is split into.
  remember_split(pool_, n, helpers_for(stats_.tensors));
}

void CopyJob::wait_for_element(int64_t i) const {
  if (feed_ && !feed_->wait_for(i))
    TORCH_CHECK(false, "mtc::start_copy: the input's root element ", i,
                " never came: its binding abandoned the copy while taking the structure apart");
}

void CopyJob::join_walk() {
  std::shared_ptr<ElementTickets> tickets;
  {
    std::lock_guard<std::mutex> lock(walk_mutex_);
    tickets = open_walk_;
  }
  if (tickets) tickets->join();
}

}  // namespace mtc::detail
