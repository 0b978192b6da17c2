// A seam for tests of the engine's failure paths: the n-th CUDA runtime call that MTC_CUDA_CHECK
// checks from now on, on any thread, fails with a chosen error without being made, as a call
// that the runtime refuses does (nothing queued, nothing allocated). Each call site's failure
// can then be provoked on a real GPU without corrupting the process's CUDA context, which a real
// device fault would. Disarmed, as it always is outside tests, a check costs one relaxed load.
//
// Polls (MTC_CUDA_POLL: an event query repeated until the device is done) are counted apart
// from the other calls. How many a copy makes depends on how fast the device drains what the
// host fills, so counted together a sweep "call 1, 2, 3, ..." never covered the same calls twice:
// on a host whose copies outran the DMAs one copy made 2,000 calls where it usually makes 67.
// The other calls a copy makes are the same in every run; its polls are swept on their own.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

namespace mtc::detail {

class CudaFaultInjection {
 public:
  // The `nth` checked call from now on (1: the next one) fails with `error`; later ones run.
  // Polls are not counted.
  static void arm(int64_t nth, cudaError_t error) { calls_.arm(nth, error); }
  // The `nth` checked poll from now on fails with `error`; other calls are not counted.
  static void arm_poll(int64_t nth, cudaError_t error) { polls_.arm(nth, error); }
  // Cancels what is still armed of both; returns whether a fault fired since arm().
  static bool disarm() {
    const bool call_fired = calls_.disarm();
    return polls_.disarm() || call_fired;
  }
  // For MTC_CUDA_CHECK: true, with `status` set, when this call is the one to fail.
  static bool fires(cudaError_t& status) { return calls_.fires(status); }
  // For MTC_CUDA_POLL: the same among polls.
  static bool fires_poll(cudaError_t& status) { return polls_.fires(status); }

 private:
  class Countdown {
   public:
    void arm(int64_t nth, cudaError_t error);
    bool disarm();
    bool fires(cudaError_t& status) {
      return countdown_.load(std::memory_order_relaxed) > 0 && take(status);
    }

   private:
    bool take(cudaError_t& status);
    std::atomic<int64_t> countdown_{0};  // checks to go until the fault; 0: disarmed
    std::atomic<int> error_{cudaSuccess};
    std::atomic<bool> fired_{false};
  };
  static Countdown calls_;
  static Countdown polls_;
};

}  // namespace mtc::detail
