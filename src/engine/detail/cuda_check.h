// Turns a failed CUDA runtime call into an exception that names the call. Tests can make any
// checked call fail instead of running it (cuda_fault.h).
#pragma once

#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include "detail/cuda_fault.h"

namespace mtc::detail {

// A failed runtime call also leaves its error pending for the calling thread, and the next
// cudaGetLastError() there returns it: after a failed cudaHostAlloc, the check of a kernel launch
// that worked (ours in gather.cu, or torch's) would blame the launch. So every place that handles
// a failure passes the status here. A sticky error (a device fault) cannot be cleared and stays.
inline void clear_cuda_error(cudaError_t status) noexcept {
  if (status != cudaSuccess) (void)cudaGetLastError();
}

// cudaEventQuery for MTC_CUDA_POLL, whose error then names the call: "not ready" is no failure
// (`done` false, nothing left pending); `done` is true once the event has completed.
inline cudaError_t cuda_event_query(cudaEvent_t event, bool& done) noexcept {
  const cudaError_t status = cudaEventQuery(event);
  done = status == cudaSuccess;
  if (status != cudaErrorNotReady) return status;
  // The runtime may leave "not ready" pending like a failure (torch clears it too).
  clear_cuda_error(status);
  return cudaSuccess;
}

}  // namespace mtc::detail

// An injected fault made no call, so it leaves nothing pending to clear. `fires` is
// CudaFaultInjection's counter the call belongs to (cuda_fault.h), `text` the call as written.
#define MTC_CUDA_CHECK_COUNTED(fires, expr, text)                 \
  do {                                                            \
    cudaError_t mtc_status_ = cudaSuccess;                        \
    if (!::mtc::detail::CudaFaultInjection::fires(mtc_status_)) { \
      mtc_status_ = (expr);                                       \
      ::mtc::detail::clear_cuda_error(mtc_status_);               \
    }                                                             \
    TORCH_CHECK(mtc_status_ == cudaSuccess, "mtc: ", text,        \
                " failed: ", cudaGetErrorName(mtc_status_), ": ", \
                cudaGetErrorString(mtc_status_));                 \
  } while (false)

#define MTC_CUDA_CHECK(expr) MTC_CUDA_CHECK_COUNTED(fires, expr, #expr)
// A query repeated until the device is done: counted apart from the other calls.
#define MTC_CUDA_POLL(expr) MTC_CUDA_CHECK_COUNTED(fires_poll, expr, #expr)
