// A pool of worker threads that runs copy orchestration and helps with split walks and large
// staging fills; the process has one per CUDA device its copies use (worker_pool_set.h). An idle
// worker spins briefly before sleeping: at a ~50 us copy, a sleep/wake handoff (~15 us median on
// the GPU host) would be a third of the budget, a spinning one 0.5 us. Spinning is bounded (200 us
// after the last task by default, MTC_WORKER_SPIN_US), so an idle process does not burn cores.
// When copies come at regular intervals too far apart for that spin (a training loop's step),
// sleeping workers wake shortly before the next one is due and spin until it comes, or until the
// forecast's window has passed: as many workers as the last copy queued tasks, each once per
// copy (arrival_forecast.h; MTC_WORKER_ANTICIPATE=0 turns it off). The first of them runs the
// pool's early-wake hook, if it has one (a device's pool warms that device's driver path:
// driver_warmup.h), and gets the first claim on the copy that comes while it spins, so that the
// copy's calls to the driver run on the core that warmed it (docs/engine-copies-after-a-gap.md).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "detail/arrival_forecast.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace mtc::detail {

// One step of a spin-wait: a pause instruction on x86 (lets the sibling hyperthread run and
// saves power), a yield elsewhere.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

class WorkerPool {
 public:
  using Task = std::function<void()>;

  // Run by the first worker that wakes ahead of a forecast copy, once per forecast, before it
  // spins; must not throw.
  using EarlyWakeHook = std::function<void()>;

  // A pool of exactly `threads` workers (at least one) whose idle workers spin for `spin`, and
  // wake ahead of a forecast copy when `anticipate` is on.
  WorkerPool(int threads, std::chrono::microseconds spin, bool anticipate = true,
             EarlyWakeHook on_early_wake = {});
  WorkerPool(const WorkerPool&) = delete;  // owns threads
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool();

  // A copy's first task (the forecast counts a copy from it), or with `starts_copy` false more
  // work of the copy under way.
  void submit(Task task, bool starts_copy = true);
  // Queues `copies` copies of `task`, waking at most one sleeping worker: each worker that
  // picks up a task wakes the next while tasks wait, so the submitting thread pays for one
  // wake-up, not one per task. For the copy under way: its walk's helpers, its parts.
  void submit_copies(const Task& task, int copies);
  // Runs one queued task on the calling thread, if there is one. Lets a thread that waits
  // for pool work help with it instead of idling.
  bool try_run_one();
  int size() const { return static_cast<int>(threads_.size()); }
  // Tells the process's pools apart (0, 1, 2, ... in the order they were made): the TensorImpl
  // pool's shard of a pool follows from it (impl_pool::shard_of_pool).
  int id() const { return id_; }
  // How long an idle worker spins before sleeping (for benchmarks that compare settings).
  void set_spin(std::chrono::microseconds spin) { spin_us_.store(spin.count()); }
  std::chrono::microseconds spin() const { return std::chrono::microseconds(spin_us_.load()); }
  static constexpr std::chrono::microseconds kDefaultSpin{200};
  // Whether sleeping workers wake ahead of a forecast copy (for benchmarks that compare).
  void set_anticipate(bool on);
  bool anticipates() const { return anticipate_.load(); }
  // Confines every worker to the CPUs in `cpus` (empty: every CPU the system has, as a new
  // thread of an unconfined process). For benchmarks that compare where workers run: the
  // scheduler otherwise moves them among all the process's CPUs. Returns false where the system
  // refuses (no CPU of `cpus` allowed).
  bool set_cpus(const std::vector<int>& cpus);
  // Times a sleeping worker woke ahead of a forecast copy, since the pool was made.
  int64_t anticipated_wakes() const { return anticipated_wakes_.load(std::memory_order_relaxed); }
  // Whether the worker that ran the early-wake hook gets the first claim on the task that comes
  // while it spins (on by default): the copy's job then runs on the core whose caches hold the
  // driver's code and data from the hook's calls. The other spinning workers leave a new task
  // to it for up to kWarmHeadStart. Process-wide, for benchmarks that compare.
  static void set_warm_worker_first(bool on);
  static bool warm_worker_first();
  // Whether the calling thread is a worker of some pool (a caller that helps with pool work while
  // it waits is not).
  static bool on_worker_thread();
  static constexpr std::chrono::microseconds kWarmHeadStart{3};

  // Runs fn(i) for i in [0, parts): the calling thread takes parts too, idle workers help.
  // Returns once every part has run; rethrows the first exception of a part.
  void parallel_for(int64_t parts, const std::function<void(int64_t)>& fn);

 private:
  void run_worker(int index);
  // After `added` tasks were queued: counts them and wakes a sleeping worker if needed.
  void count_and_wake(int64_t added);
  // Claims a task from `pending_` before taking the lock, so that only as many threads contend
  // for the queue as there are tasks in it (not every spinning worker at each new task).
  bool try_pop(Task& task);
  // A worker's part in the forecasts: the burst whose forecast it last took up, whether it holds
  // one of that forecast's early wakes (and whether the first, which runs the hook), and, once
  // woken early, when to stop spinning and whether the hook is still to run.
  struct EarlyWake {
    int64_t burst = -1;
    bool claimed = false;
    bool first = false;
    bool run_hook = false;
    ArrivalForecast::Clock::time_point spin_until{};
  };
  // Sleeps until a task is queued (true), the pool stops with nothing queued (false), or the
  // forecast's next copy is due and `early` holds one of its wakes (true, with
  // early.spin_until the end of its window). Holds `lock`.
  bool sleep(std::unique_lock<std::mutex>& lock, EarlyWake& early);

  const int id_;
  const EarlyWakeHook on_early_wake_;
  std::atomic<int64_t> spin_us_;
  std::atomic<bool> anticipate_;
  std::atomic<int64_t> anticipated_wakes_{0};
  std::mutex mutex_;
  ArrivalForecast forecast_;  // guarded by mutex_
  int64_t early_burst_ = -1;  // the forecast whose early wakes are being handed out (mutex_)
  int64_t early_wakers_ = 0;  // how many it has handed out (mutex_)
  std::condition_variable wake_;
  std::deque<Task> queue_;
  std::atomic<int64_t> pending_{0};
  std::atomic<int> spinners_{0};
  std::atomic<bool> stopping_{false};  // set under mutex_; read by spinners without it
  // Set while the worker that ran the early-wake hook spins, until it takes a task or sleeps.
  std::atomic<bool> warm_spinner_{false};
  std::vector<std::thread> threads_;  // started by the constructor, joined by the destructor
};

}  // namespace mtc::detail
