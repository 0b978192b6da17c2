// Reusable CUDA events (timing disabled), one free list per device: recording a completion
// must not cost an event creation on every copy.
#pragma once

#include <c10/core/Device.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

namespace mtc::detail {

class EventPool {
 public:
  // Never destroyed (see PinnedPoolSet::instance).
  static EventPool& instance();

  // The caller must have `device` current. Throws on a CUDA error or std::bad_alloc.
  cudaEvent_t acquire(c10::DeviceIndex device);
  // Allocates nothing: the free list has room for every event the pool made (release runs in
  // destructors and failure paths, where an exception ends the process).
  void release(c10::DeviceIndex device, cudaEvent_t event) noexcept;

  // Events made for `device` and events waiting in its free list (for tests).
  size_t made(c10::DeviceIndex device);
  size_t waiting(c10::DeviceIndex device);

 private:
  struct PerDevice {
    std::vector<cudaEvent_t> free;
    size_t made = 0;  // free.capacity() is at least this
  };
  std::mutex mutex_;
  std::vector<PerDevice> devices_;  // by device index
};

}  // namespace mtc::detail
