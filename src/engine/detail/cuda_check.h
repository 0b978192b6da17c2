// Turns a failed CUDA runtime call into an exception that names the call. Tests can make any
// checked call fail instead of running it (cuda_fault.h).
#pragma once

#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include "detail/cuda_fault.h"

#define MTC_CUDA_CHECK(expr)                                                                \
  do {                                                                                      \
    cudaError_t mtc_status_ = cudaSuccess;                                                  \
    if (!::mtc::detail::CudaFaultInjection::fires(mtc_status_)) mtc_status_ = (expr);       \
    TORCH_CHECK(mtc_status_ == cudaSuccess, "mtc: ", #expr, " failed: ",                    \
                cudaGetErrorName(mtc_status_), ": ", cudaGetErrorString(mtc_status_));      \
  } while (false)
