#include "runner/measure/device_threads.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <mtc/nvtx.h>

#include <stdexcept>
#include <string>

namespace mtc::bench {

void bind_thread_to_device(int device) {
  if (device >= 0) {
    const cudaError_t status = cudaSetDevice(device);
    if (status != cudaSuccess) {
      throw std::runtime_error(
          fmt::format("cudaSetDevice({}): {}", device, cudaGetErrorString(status)));
    }
  }
  // Short enough for Linux's 15-character thread names, so `top -H` shows the same.
  const std::string name = device >= 0 ? fmt::format("mtc-bench gpu{}", device) : "mtc-bench cpu";
  mtc::nvtx::name_current_thread(name.c_str());
}

DeviceThreads::DeviceThreads(std::vector<int> devices) : devices_(std::move(devices)) {
  if (devices_.size() == 1) {
    bind_thread_to_device(devices_.front());
    return;
  }
  threads_.reserve(devices_.size());
  for (size_t i = 0; i < devices_.size(); ++i) threads_.emplace_back([this, i] { worker_loop(i); });
}

DeviceThreads::~DeviceThreads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void DeviceThreads::run(const std::function<void(size_t)>& task) {
  if (threads_.empty()) {
    for (size_t i = 0; i < devices_.size(); ++i) task(i);
    return;
  }
  std::unique_lock lock(mutex_);
  task_ = &task;
  pending_ = threads_.size();
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  finished_.wait(lock, [this] { return pending_ == 0; });
  task_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void DeviceThreads::worker_loop(size_t index) {
  std::exception_ptr bind_error;
  try {
    bind_thread_to_device(devices_[index]);
  } catch (...) {
    bind_error = std::current_exception();
  }
  uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    const auto* task = task_;
    lock.unlock();
    std::exception_ptr error = bind_error;
    if (!error) {
      try {
        (*task)(index);
      } catch (...) {
        error = std::current_exception();
      }
    }
    lock.lock();
    if (error && !error_) error_ = error;
    if (--pending_ == 0) finished_.notify_all();
  }
}

}  // namespace mtc::bench
