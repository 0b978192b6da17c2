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

  // The caller must have `device` current. Throws on a CUDA error.
  cudaEvent_t acquire(c10::DeviceIndex device);
  void release(c10::DeviceIndex device, cudaEvent_t event) noexcept;

 private:
  std::mutex mutex_;
  std::vector<std::vector<cudaEvent_t>> free_;  // by device index
};

}  // namespace mtc::detail
