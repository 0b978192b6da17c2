#include "detail/cuda_fault.h"

namespace mtc::detail {

CudaFaultInjection::Countdown CudaFaultInjection::calls_;
CudaFaultInjection::Countdown CudaFaultInjection::polls_;

void CudaFaultInjection::Countdown::arm(int64_t nth, cudaError_t error) {
  fired_.store(false);
  error_.store(error);
  countdown_.store(nth > 0 ? nth : 0);
}

bool CudaFaultInjection::Countdown::disarm() {
  countdown_.store(0);
  return fired_.exchange(false);
}

bool CudaFaultInjection::Countdown::take(cudaError_t& status) {
  // Several threads may check calls at once: exactly one of them takes the last step.
  int64_t left = countdown_.load();
  while (left > 0) {
    if (countdown_.compare_exchange_weak(left, left - 1)) {
      if (left != 1) return false;
      status = static_cast<cudaError_t>(error_.load());
      fired_.store(true);
      return true;
    }
  }
  return false;
}

}  // namespace mtc::detail
