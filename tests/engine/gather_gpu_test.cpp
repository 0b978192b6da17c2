// The device-side gather of many small tensors into one buffer, both ways its descriptors can
// travel: as kernel parameters (launch_gather) and in pinned host memory that the kernel reads
// in place (launch_gather_pinned). Both must place every byte where its descriptor says, for
// sizes and offsets that do and do not allow 16-byte accesses. Skipped without a CUDA device.
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "detail/gather.h"
#include "detail/pinned_pool.h"
#include "detail/round_up.h"
#include "gpu_test_support.h"

namespace {

using mtc::detail::GatherItem;
using mtc::detail::PinnedBlock;
using mtc::detail::PinnedPool;
using mtc::detail::round_up;
using mtc::test::bytes_of;
using mtc::test::GpuTest;
using mtc::test::kCuda0;
using mtc::test::random_tensor;

class GatherGpu : public GpuTest {};

// What the destination holds before a gather: a byte the gather leaves alone shows as this, even
// where the source's random byte is 0 (the gaps before aligned items keep it).
constexpr uint8_t kFill = 0xA5;
at::Tensor filled_destination(int64_t bytes) {
  return at::full({bytes}, kFill, at::TensorOptions(kCuda0).dtype(at::kByte));
}

// `count` device tensors packed back to back: every fourth a multiple of 16 bytes (up to
// 4,800, so a block's threads make more than one pass of 16-byte accesses) at an offset that is
// one too, the others 1 to 700 bytes at whatever offset follows.
struct Sources {
  explicit Sources(size_t count) {
    int64_t offset = 0;
    for (size_t i = 0; i < count; ++i) {
      const bool aligned = i % 4 == 0;
      if (aligned) offset = round_up(offset, 16);
      const int64_t bytes = aligned ? 16 * static_cast<int64_t>(1 + i % 300)
                                    : 1 + static_cast<int64_t>((i * 37) % 700);
      tensors.push_back(random_tensor(at::kByte, {bytes}, kCuda0));
      items.push_back(
          {tensors.back().data_ptr(), static_cast<uint64_t>(offset), static_cast<uint64_t>(bytes)});
      offset += bytes;
    }
    total = offset;
  }
  // What the gathered buffer must hold: every source's bytes at its offset.
  std::vector<uint8_t> expected() const {
    std::vector<uint8_t> out(static_cast<size_t>(total), kFill);
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::vector<uint8_t> b = bytes_of(tensors[i]);
      std::memcpy(out.data() + items[i].dst_offset, b.data(), b.size());
    }
    return out;
  }
  std::vector<at::Tensor> tensors;
  std::vector<GatherItem> items;
  int64_t total = 0;
};

cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

// 1 and 3: a few blocks; 528: the reference batch's count, past one parameter launch of 128;
// 2,500: past the largest parameter launch (1,024), so launch_gather needs three.
TEST_F(GatherGpu, DescriptorsAsParametersPlaceEveryByte) {
  for (const size_t count : {1, 3, 528, 2500}) {
    SCOPED_TRACE(count);
    const Sources s(count);
    const at::Tensor dst = filled_destination(s.total);
    mtc::detail::launch_gather(s.items.data(), s.items.size(),
                               static_cast<std::byte*>(dst.data_ptr()), current_stream());
    EXPECT_TRUE(bytes_of(dst) == s.expected());
  }
}

TEST_F(GatherGpu, DescriptorsInPinnedMemoryPlaceEveryByte) {
  PinnedPool pool;  // cudaHostAlloc slabs, as the engine's staging
  for (const size_t count : {1, 3, 528, 2500}) {
    SCOPED_TRACE(count);
    const Sources s(count);
    const PinnedBlock block = pool.acquire(static_cast<int64_t>(count * sizeof(GatherItem)));
    auto* descriptors = reinterpret_cast<GatherItem*>(block.data);
    std::memcpy(descriptors, s.items.data(), count * sizeof(GatherItem));
    const at::Tensor dst = filled_destination(s.total);
    mtc::detail::launch_gather_pinned(descriptors, count, static_cast<std::byte*>(dst.data_ptr()),
                                      current_stream());
    EXPECT_TRUE(bytes_of(dst) == s.expected());  // synchronizes before the block goes back
    PinnedPool::give_back(block);
  }
}

}  // namespace
