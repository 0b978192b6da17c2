// Gathers many small device tensors into one packed device buffer with one kernel launch per
// kGatherBatch tensors, so a GPU-side pack costs a few launches instead of one copy per tensor.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace mtc::detail {

struct GatherItem {
  const void* src;
  uint64_t dst_offset;
  uint64_t bytes;
};

// Descriptors travel as kernel parameters; 128 of 24 bytes stay under the classic 4 KiB limit.
inline constexpr int kGatherBatch = 128;

// Enqueues the gathers on `stream` (of the device that holds the sources and `dst`).
// (Compiled as CUDA C++17, hence no std::span.)
void launch_gather(const GatherItem* items, size_t count, std::byte* dst, cudaStream_t stream);

}  // namespace mtc::detail
