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

// The environment variable that fixes the process-wide pool's worker count (otherwise it follows
// the devices in use, see WorkerCount); more workers fill large tensors' pinned chunks with more
// threads.
inline constexpr const char* kWorkerThreadsVariable = "MTC_WORKER_THREADS";
inline constexpr int kMaxWorkerThreads = 256;
// `text` as a worker count (1 .. kMaxWorkerThreads); `fallback` when null or empty. Throws
// c10::Error naming the variable for anything else.
int parse_worker_threads(const char* text, int fallback);

// Workers for each CUDA device the process copies to or from. One copy of the reference batch
// walks its structure on four threads (its own and three helpers): GPUs copying at the same
// moment each want as many, and a single set of four shared by all of them makes their walks
// take turns.
inline constexpr int kWorkersPerDevice = 4;

// How many workers a pool runs: `fixed` if set, otherwise `per_device` for each CUDA device in
// use (CPU-only copies count as one device), never more than the hardware threads, at least one.
struct WorkerCount {
  int fixed = 0;  // 0: follow the devices
  int per_device = kWorkersPerDevice;
  int hardware_threads = 1;

  int for_devices(int devices_in_use) const;
  // The process-wide pool's: MTC_WORKER_THREADS when set (throws c10::Error naming it when it is
  // not a worker count), this machine's hardware threads.
  static WorkerCount from_environment();
};

class WorkerPool {
 public:
  using Task = std::function<void()>;

  // The process-wide pool, sized by WorkerCount::from_environment(): it starts with one
  // device's workers and grows as copies use more devices. Never destroyed, so copies still in
  // flight at exit do not race a joining destructor. Throws c10::Error when MTC_WORKER_THREADS is
  // set to something other than a worker count.
  static WorkerPool& instance();

  // A pool of exactly `threads` workers (its count is fixed).
  WorkerPool(int threads, std::chrono::microseconds spin);
  // A pool of count.for_devices(0) workers that grows with use_device().
  WorkerPool(WorkerCount count, std::chrono::microseconds spin);
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
  int size() const { return size_.load(std::memory_order_relaxed); }
  // A copy to or from CUDA device `device` is starting. The first time a device is seen, the
  // pool grows to its WorkerCount for the devices seen so far (starting threads costs ~35 us
  // each, once); after that it is one atomic load. Never shrinks.
  void use_device(int device);
  int devices_in_use() const;
  // How long an idle worker spins before sleeping (for benchmarks that compare settings).
  void set_spin(std::chrono::microseconds spin) { spin_us_.store(spin.count()); }
  static constexpr std::chrono::microseconds kDefaultSpin{200};

  // Runs fn(i) for i in [0, parts): the calling thread takes parts too, idle workers help.
  // Returns once every part has run; rethrows the first exception of a part.
  void parallel_for(int64_t parts, const std::function<void(int64_t)>& fn);

 private:
  void run_worker(int index);
  // Starts workers until there are `threads`.
  void grow_to(int threads);
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
  const WorkerCount count_;
  // Device indices are below 128 (c10::DeviceIndex is 8 bits): one bit each.
  std::atomic<uint64_t> devices_[2] = {0, 0};
  std::mutex grow_mutex_;  // guards threads_ and closed_; held while threads start
  std::vector<std::thread> threads_;
  bool closed_ = false;  // the destructor has taken the threads: no more start
  std::atomic<int> size_{0};
};

}  // namespace mtc::detail
