// One long-lived thread per GPU, so several GPUs are driven at once and each thread keeps its
// CUDA device, its torch thread-local state and its name in profiler timelines for the whole
// run. With one GPU the work runs on the calling thread: no handoff.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mtc::bench {

class DeviceThreads {
 public:
  // devices: one CUDA device index per worker; -1 means "no GPU" (CPU-only runs).
  explicit DeviceThreads(std::vector<int> devices);
  ~DeviceThreads();
  DeviceThreads(const DeviceThreads&) = delete;  // owns threads
  DeviceThreads& operator=(const DeviceThreads&) = delete;

  size_t size() const { return devices_.size(); }
  // Runs task(i) on worker i for every i at once and waits for all of them; rethrows the first
  // exception a task let escape.
  void run(const std::function<void(size_t)>& task);

 private:
  void worker_loop(size_t index);

  std::vector<int> devices_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  const std::function<void(size_t)>* task_ = nullptr;
  uint64_t generation_ = 0;
  size_t pending_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

// Makes `device` current on this thread (no-op for -1) and names the thread for profilers.
void bind_thread_to_device(int device);

}  // namespace mtc::bench
