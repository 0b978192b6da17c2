// The process-wide pool of worker threads that runs copy orchestration and helps with large
// staging fills. An idle worker spins briefly before sleeping: at a ~50 us copy, a sleep/wake
// handoff (~15 us median on the GPU host) would be a third of the budget, a spinning one 0.5 us.
// Spinning is bounded (200 us after the last task), so an idle process does not burn cores.
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

// The environment variable that sets the process-wide pool's worker count (default: min(4,
// hardware threads)); more workers fill large tensors' pinned chunks with more threads.
inline constexpr const char* kWorkerThreadsVariable = "MTC_WORKER_THREADS";
inline constexpr int kMaxWorkerThreads = 256;
// `text` as a worker count (1 .. kMaxWorkerThreads); `fallback` when null or empty. Throws
// c10::Error naming the variable for anything else.
int parse_worker_threads(const char* text, int fallback);

class WorkerPool {
 public:
  using Task = std::function<void()>;

  // The process-wide pool (MTC_WORKER_THREADS workers, or min(4, hardware threads), at least 1).
  // Never destroyed, so copies still in flight at exit do not race a joining destructor. Throws
  // c10::Error when MTC_WORKER_THREADS is set to something other than a worker count.
  static WorkerPool& instance();

  WorkerPool(int threads, std::chrono::microseconds spin);
  WorkerPool(const WorkerPool&) = delete;  // owns threads
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool();

  void submit(Task task);
  // Queues `copies` copies of `task`, waking at most one sleeping worker: each worker that
  // picks up a task wakes the next while tasks wait, so the submitting thread pays for one
  // wake-up, not one per task.
  void submit_copies(const Task& task, int copies);
  // Runs one queued task on the calling thread, if there is one. Lets a thread that waits
  // for pool work help with it instead of idling.
  bool try_run_one();
  int size() const { return static_cast<int>(threads_.size()); }
  // How long an idle worker spins before sleeping (for benchmarks that compare settings).
  void set_spin(std::chrono::microseconds spin) { spin_us_.store(spin.count()); }
  static constexpr std::chrono::microseconds kDefaultSpin{200};

  // Runs fn(i) for i in [0, parts): the calling thread takes parts too, idle workers help.
  // Returns once every part has run; rethrows the first exception of a part.
  void parallel_for(int64_t parts, const std::function<void(int64_t)>& fn);

 private:
  void run_worker(int index);
  // After `added` tasks were queued: counts them and wakes a sleeping worker if needed.
  void count_and_wake(int64_t added);
  bool try_pop(Task& task);

  std::atomic<int64_t> spin_us_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  std::atomic<int64_t> pending_{0};
  std::atomic<int> spinners_{0};
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace mtc::detail
