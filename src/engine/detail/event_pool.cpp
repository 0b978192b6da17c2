#include "detail/event_pool.h"

#include "detail/cuda_check.h"

namespace mtc::detail {

EventPool& EventPool::instance() {
  static EventPool* pool = new EventPool();
  return *pool;
}

cudaEvent_t EventPool::acquire(c10::DeviceIndex device) {
  const auto index = static_cast<size_t>(device);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (index >= devices_.size()) devices_.resize(index + 1);
    PerDevice& d = devices_[index];
    if (!d.free.empty()) {
      cudaEvent_t event = d.free.back();
      d.free.pop_back();
      return event;
    }
    // Room in the free list for the event about to be made, before it exists.
    d.free.reserve(d.made + 1);
    ++d.made;
  }
  cudaEvent_t event = nullptr;
  const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (status != cudaSuccess) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --devices_[index].made;
    }
    MTC_CUDA_CHECK(status);
  }
  return event;
}

void EventPool::release(c10::DeviceIndex device, cudaEvent_t event) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto index = static_cast<size_t>(device);
  if (index < devices_.size() && devices_[index].free.size() < devices_[index].free.capacity()) {
    devices_[index].free.push_back(event);
  } else {
    // Not one of the pool's (no room was made for it): destroyed rather than kept.
    clear_cuda_error(cudaEventDestroy(event));
  }
}

size_t EventPool::made(c10::DeviceIndex device) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto index = static_cast<size_t>(device);
  return index < devices_.size() ? devices_[index].made : 0;
}

size_t EventPool::waiting(c10::DeviceIndex device) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto index = static_cast<size_t>(device);
  return index < devices_.size() ? devices_[index].free.size() : 0;
}

}  // namespace mtc::detail
