#include <algorithm>

#include "detail/cuda_check.h"
#include "detail/gather.h"

namespace mtc::detail {
namespace {

template <int N>
struct GatherBatch {
  GatherItem items[N];
};

constexpr int kThreads = 256;

// One block copies one tensor. 16-byte accesses when source, destination and size allow it.
__device__ void copy_item(const GatherItem& item, std::byte* dst) {
  const auto* src = static_cast<const std::byte*>(item.src);
  std::byte* out = dst + item.dst_offset;
  const bool vectorizable =
      ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(out) | item.bytes) & 15u) ==
      0;
  if (vectorizable) {
    const auto* s = reinterpret_cast<const uint4*>(src);
    auto* d = reinterpret_cast<uint4*>(out);
    for (uint64_t i = threadIdx.x; i < item.bytes / 16; i += blockDim.x) d[i] = s[i];
  } else {
    for (uint64_t i = threadIdx.x; i < item.bytes; i += blockDim.x) out[i] = src[i];
  }
}

template <int N>
__global__ void gather_kernel(const __grid_constant__ GatherBatch<N> batch, std::byte* dst) {
  copy_item(batch.items[blockIdx.x], dst);
}

// The descriptors in pinned host memory: one thread of each block reads its block's across
// PCIe, once, and shares it.
__global__ void gather_pinned_kernel(const GatherItem* items, std::byte* dst) {
  __shared__ GatherItem item;
  if (threadIdx.x == 0) item = items[blockIdx.x];
  __syncthreads();
  copy_item(item, dst);
}

template <int N>
void launch_batches(const GatherItem* items, size_t count, std::byte* dst, cudaStream_t stream) {
  for (size_t first = 0; first < count; first += N) {
    const size_t n = std::min<size_t>(N, count - first);
    GatherBatch<N> batch;
    std::copy_n(items + first, n, batch.items);
    gather_kernel<N><<<static_cast<unsigned>(n), kThreads, 0, stream>>>(batch, dst);
    MTC_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

void launch_gather(const GatherItem* items, size_t count, std::byte* dst, cudaStream_t stream) {
  if (count <= kGatherBatch) {
    launch_batches<kGatherBatch>(items, count, dst, stream);
  } else {
    launch_batches<kLargeGatherBatch>(items, count, dst, stream);
  }
}

void launch_gather_pinned(const GatherItem* pinned_items, size_t count, std::byte* dst,
                          cudaStream_t stream) {
  // A grid holds up to 2^31 - 1 blocks in x.
  constexpr size_t kMaxBlocks = 0x7fffffff;
  for (size_t first = 0; first < count; first += kMaxBlocks) {
    const size_t n = std::min(kMaxBlocks, count - first);
    gather_pinned_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(pinned_items + first,
                                                                            dst);
    MTC_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace mtc::detail
