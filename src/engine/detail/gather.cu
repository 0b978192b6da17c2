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

// One block per tensor. 16-byte accesses when source, destination and size allow it.
template <int N>
__global__ void gather_kernel(const __grid_constant__ GatherBatch<N> batch, std::byte* dst) {
  const GatherItem item = batch.items[blockIdx.x];
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

}  // namespace mtc::detail
