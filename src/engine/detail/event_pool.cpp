#include "detail/event_pool.h"

#include "detail/cuda_check.h"

namespace mtc::detail {

EventPool& EventPool::instance() {
  static EventPool* pool = new EventPool();
  return *pool;
}

cudaEvent_t EventPool::acquire(c10::DeviceIndex device) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<size_t>(device) < free_.size() && !free_[device].empty()) {
      cudaEvent_t event = free_[device].back();
      free_[device].pop_back();
      return event;
    }
  }
  cudaEvent_t event = nullptr;
  MTC_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void EventPool::release(c10::DeviceIndex device, cudaEvent_t event) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<size_t>(device) >= free_.size()) free_.resize(device + 1);
  free_[device].push_back(event);
}

}  // namespace mtc::detail
