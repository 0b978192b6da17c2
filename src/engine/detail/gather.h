// Gathers many small device tensors into one packed device buffer with one kernel launch (or
// one per kLargeGatherBatch when the descriptors are the parameters), so a GPU-side pack costs a
// launch instead of one copy per tensor.
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

// Descriptors travel as kernel parameters, which may take up to 32,764 bytes on Volta and newer
// GPUs since CUDA 12.1. A launch copies its parameters whole, so a gather of up to 128 tensors
// takes one launch of 3 KiB and a larger one launches of up to 1,024 (24 KiB): with 128 a launch,
// the reference batch's 528 device tensors took five launches where one does.
inline constexpr int kGatherBatch = 128;
inline constexpr int kLargeGatherBatch = 1024;

// Enqueues the gathers on `stream` (of the device that holds the sources and `dst`).
// (Compiled as CUDA C++17, hence no std::span.)
void launch_gather(const GatherItem* items, size_t count, std::byte* dst, cudaStream_t stream);

// The same with the descriptors in pinned memory from cudaHostAlloc, which kernels read in place
// (unified addressing maps it on every device): one launch of a pointer, where launch_gather
// copies up to 24 KiB of parameters per launch on the calling thread. Under Nsight Systems a
// launch of the reference batch's 528 as parameters took a median of 17 us back to back and
// 40 us after an idle gap; with a pointer, GPU->CPU copies were only 1.4-3.8 % shorter
// (in-process A/B, 1 x H200, 2026-11-29; four of its six intervals within 2 %), so most of a
// launch's cost there is not its parameters. The descriptors must stay as they are until the gather
// has run.
void launch_gather_pinned(const GatherItem* pinned_items, size_t count, std::byte* dst,
                          cudaStream_t stream);

}  // namespace mtc::detail
