// Turns a failed CUDA runtime call into an exception that names the call.
#pragma once

#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#define MTC_CUDA_CHECK(expr)                                                                \
  do {                                                                                      \
    const cudaError_t mtc_status_ = (expr);                                                 \
    TORCH_CHECK(mtc_status_ == cudaSuccess, "mtc: ", #expr, " failed: ",                    \
                cudaGetErrorName(mtc_status_), ": ", cudaGetErrorString(mtc_status_));      \
  } while (false)
