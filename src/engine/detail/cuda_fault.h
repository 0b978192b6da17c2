// A seam for tests of the engine's failure paths: the n-th CUDA runtime call that MTC_CUDA_CHECK
// checks from now on, on any thread, fails with a chosen error without being made, as a call
// that the runtime refuses does (nothing queued, nothing allocated). Each call site's failure
// can then be provoked on a real GPU without corrupting the process's CUDA context, which a real
// device fault would. Disarmed, as it always is outside tests, a check costs one relaxed load.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

namespace mtc::detail {

class CudaFaultInjection {
 public:
  // The `nth` checked call from now on (1: the next one) fails with `error`; later ones run.
  static void arm(int64_t nth, cudaError_t error);
  // Cancels what is still armed; returns whether the fault fired since arm().
  static bool disarm();
  // For MTC_CUDA_CHECK: true, with `status` set, when this call is the one to fail.
  static bool fires(cudaError_t& status) {
    return countdown_.load(std::memory_order_relaxed) > 0 && take(status);
  }

 private:
  static bool take(cudaError_t& status);
  static std::atomic<int64_t> countdown_;  // calls to go until the fault; 0: disarmed
  static std::atomic<int> error_;
  static std::atomic<bool> fired_;
};

}  // namespace mtc::detail
