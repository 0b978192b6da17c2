// The host-side helpers of the copier's routes: the packed staging fill, the parallel memcpy,
// and the output views over chunk storages (the pool of their TensorImpls: impl_pool_test.cpp).
// Runs without a GPU.
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/zeros.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "detail/outputs.h"
#include "detail/pack_plan.h"
#include "detail/staging.h"
#include "test_constants.h"

namespace {

using mtc::test::kCpu;

std::vector<at::Tensor> random_tensors(
    const std::vector<std::pair<int64_t, at::ScalarType>>& specs) {
  std::vector<at::Tensor> out;
  for (const auto& [numel, dtype] : specs) {
    const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(dtype));
    out.push_back(at::randint(256, {bytes}, at::kByte).view(dtype));
  }
  return out;
}

// fill_staging must put each tensor's bytes at its planned place and touch nothing else, on one
// thread (small totals) and split across the worker pool (>= kParallelFillBytes).
TEST(Staging, FillStagingPlacesEveryItemAndNothingElse) {
  using namespace mtc::detail;
  for (const int64_t scale : {int64_t{1}, int64_t{40}}) {
    SCOPED_TRACE(::testing::Message() << "scale " << scale);
    std::vector<std::pair<int64_t, at::ScalarType>> specs;
    const at::ScalarType dtypes[] = {at::kByte, at::kHalf, at::kFloat, at::kDouble,
                                     at::kComplexDouble};
    for (int i = 0; i < 97; ++i) specs.push_back({1 + (i * 37) % 200 * scale, dtypes[i % 5]});
    const std::vector<at::Tensor> inputs = random_tensors(specs);
    std::vector<PackCandidate> candidates;
    for (size_t i = 0; i < inputs.size(); ++i)
      candidates.push_back({static_cast<int64_t>(i), static_cast<int64_t>(inputs[i].nbytes()),
                            static_cast<int64_t>(inputs[i].element_size())});
    const PackPlan plan = plan_packing(candidates, 16, 256 * 1024);
    std::vector<int64_t> chunk_offsets;
    int64_t total = 0;
    for (const PackChunk& c : plan.chunks) {
      chunk_offsets.push_back(total);
      total += (c.bytes + 255) / 256 * 256;
    }
    int64_t payload = 0;
    for (const PackChunk& c : plan.chunks) payload += c.bytes;
    if (scale > 1) {
      EXPECT_GE(payload, kParallelFillBytes) << "the parallel path is not exercised";
      EXPECT_GT(plan.chunks.size(), 1u);
    } else {
      EXPECT_LT(payload, kParallelFillBytes);
    }
    std::vector<StagingCopy> copies;
    for (const PackItem& item : plan.items)
      copies.push_back({inputs[item.leaf].const_data_ptr(), chunk_offsets[item.chunk] + item.offset,
                        item.bytes});
    std::vector<std::byte> buffer(static_cast<size_t>(total), std::byte{0xCD});
    fill_staging(copies, buffer.data());
    std::vector<bool> covered(buffer.size(), false);
    for (const PackItem& item : plan.items) {
      const int64_t at_byte = chunk_offsets[item.chunk] + item.offset;
      EXPECT_EQ(std::memcmp(buffer.data() + at_byte, inputs[item.leaf].const_data_ptr(),
                            static_cast<size_t>(item.bytes)),
                0)
          << "leaf " << item.leaf;
      for (int64_t k = 0; k < item.bytes; ++k) covered[at_byte + k] = true;
    }
    size_t stray = 0;
    for (size_t k = 0; k < buffer.size(); ++k)
      if (!covered[k] && buffer[k] != std::byte{0xCD}) ++stray;
    EXPECT_EQ(stray, 0u) << "bytes outside every item were written";
  }
}

TEST(Staging, RunHostCopiesCopiesExactlyTheRanges) {
  using mtc::detail::kParallelFillBytes;
  // One copy of each size, then several copies at once whose parts begin and end inside copies.
  const std::vector<std::vector<int64_t>> cases{
      {0},
      {1},
      {kParallelFillBytes - 1},
      {kParallelFillBytes},
      {kParallelFillBytes + 3},
      {5 * kParallelFillBytes + 7},
      {33 * kParallelFillBytes + 1},
      {3, kParallelFillBytes / 2 + 1, 0, 2 * kParallelFillBytes + 5, 17, kParallelFillBytes - 9},
      {kParallelFillBytes / 3, kParallelFillBytes / 3, kParallelFillBytes / 3,
       kParallelFillBytes / 3}};
  for (const std::vector<int64_t>& sizes : cases) {
    SCOPED_TRACE(::testing::Message()
                 << sizes.size() << " copies, the first of " << sizes[0] << " bytes");
    std::vector<at::Tensor> sources;
    std::vector<std::vector<std::byte>> targets;
    std::vector<mtc::detail::HostCopy> copies;
    for (const int64_t bytes : sizes) {
      sources.push_back(at::randint(256, {bytes + 1}, at::kByte));
      targets.emplace_back(static_cast<size_t>(bytes + 64), std::byte{0x5A});
      const auto* src =
          static_cast<const std::byte*>(sources.back().const_data_ptr()) + 1;  // unaligned
      copies.push_back({targets.back().data() + 3, src, bytes});
    }
    mtc::detail::run_host_copies(copies);
    for (size_t c = 0; c < copies.size(); ++c) {
      const std::vector<std::byte>& dst = targets[c];
      const auto bytes = static_cast<size_t>(sizes[c]);
      EXPECT_EQ(std::memcmp(dst.data() + 3, copies[c].src, bytes), 0) << "copy " << c;
      for (size_t k = 0; k < 3; ++k) EXPECT_EQ(dst[k], std::byte{0x5A}) << "copy " << c;
      for (size_t k = bytes + 3; k < dst.size(); ++k)
        ASSERT_EQ(dst[k], std::byte{0x5A}) << "copy " << c << " written past its end at " << k;
    }
  }
}

TEST(Outputs, AlignmentShift) {
  using mtc::detail::alignment_shift;
  alignas(4096) static std::byte base[8192];
  EXPECT_EQ(alignment_shift(base, 1), 0);
  EXPECT_EQ(alignment_shift(base, 4096), 0);
  EXPECT_EQ(alignment_shift(base + 1, 16), 15);
  EXPECT_EQ(alignment_shift(base + 16, 16), 0);
  EXPECT_EQ(alignment_shift(base + 100, 4096), 3996);
  EXPECT_EQ(alignment_shift(base + 5, 1), 0);
}

TEST(Outputs, MakeViewOverASharedStorage) {
  using namespace mtc::detail;
  c10::DataPtr data = c10::GetCPUAllocator()->allocate(1024);
  auto* raw = static_cast<std::byte*>(data.get());
  for (int i = 0; i < 1024; ++i) raw[i] = static_cast<std::byte>(i % 251);
  const c10::Storage storage = make_storage(std::move(data), 1024);
  EXPECT_EQ(storage.nbytes(), 1024u);

  const at::Tensor like_f = at::zeros({3, 4}, at::kFloat);
  const at::Tensor f = make_view(storage, 64, like_f);
  EXPECT_EQ(f.sizes(), like_f.sizes());
  EXPECT_EQ(f.strides(), like_f.strides());
  EXPECT_EQ(f.scalar_type(), at::kFloat);
  EXPECT_EQ(f.device(), kCpu);
  EXPECT_EQ(f.data_ptr(), static_cast<void*>(raw + 64));
  EXPECT_TRUE(f.storage().is_alias_of(storage));

  const at::Tensor like_d = at::zeros({5}, at::kDouble).slice(0, 0, 5, 1);
  const at::Tensor d = make_view(storage, 128, like_d);
  EXPECT_EQ(d.data_ptr(), static_cast<void*>(raw + 128));
  EXPECT_EQ(std::memcmp(d.const_data_ptr(), raw + 128, 40), 0);

  const at::Tensor like_t = at::zeros({4, 2}, at::kShort).t();  // keeps the like's strides
  const at::Tensor t = make_view(storage, 6, like_t);
  EXPECT_EQ(t.strides(), like_t.strides());
  EXPECT_EQ(t.data_ptr(), static_cast<void*>(raw + 6));
}

// An alias storage shares the bytes of its storage and keeps it alive: the storage's memory is
// freed when the last of the alias and the views on it dies, not when the storage does.
TEST(Outputs, AnAliasStorageKeepsItsStorageAliveUntilItDies) {
  using namespace mtc::detail;
  static bool freed = false;
  freed = false;
  auto* raw = new std::byte[256];
  for (int i = 0; i < 256; ++i) raw[i] = static_cast<std::byte>(i);
  c10::Storage storage = make_storage(c10::DataPtr(
                                          raw, raw,
                                          [](void* p) {
                                            delete[] static_cast<std::byte*>(p);
                                            freed = true;
                                          },
                                          kCpu),
                                      256);
  c10::Storage alias = make_alias_storage(storage);
  EXPECT_EQ(alias.data(), storage.data());
  EXPECT_EQ(alias.nbytes(), 256u);
  storage = c10::Storage();
  EXPECT_FALSE(freed);
  at::Tensor view = make_view(alias, 16, at::zeros({4}, at::kByte));
  alias = c10::Storage();
  EXPECT_FALSE(freed);
  EXPECT_EQ(view[3].item<uint8_t>(), 19);
  view = at::Tensor();
  EXPECT_TRUE(freed);
}

// An alias of a resizable storage is resizable with the same allocator: a view that grows past
// it gets memory of its own, and the storage's bytes stay as they were.
TEST(Outputs, AnAliasOfAResizableStorageGrowsLikeIt) {
  using namespace mtc::detail;
  const at::Tensor chunk = at::arange(64, at::kByte);
  const c10::Storage alias = make_alias_storage(chunk.storage());
  EXPECT_TRUE(alias.resizable());
  EXPECT_EQ(alias.allocator(), chunk.storage().allocator());
  at::Tensor view = make_view(alias, 8, at::zeros({4}, at::kByte));
  EXPECT_EQ(view[0].item<uint8_t>(), 8);
  view.resize_({4096});
  EXPECT_NE(view.data_ptr(), chunk.data_ptr());
  EXPECT_EQ(view[0].item<uint8_t>(), 8) << "the bytes before the resize are kept";
  view.fill_(0);
  EXPECT_EQ(chunk[8].item<uint8_t>(), 8) << "the chunk's own bytes are untouched";
  EXPECT_FALSE(
      make_alias_storage(make_storage(c10::GetCPUAllocator()->allocate(8), 8)).resizable());
}

// A CUDA block's alias would hide it from record_stream: refused.
TEST(Outputs, AliasStoragesAreForCpuStoragesOnly) {
  using namespace mtc::detail;
  const c10::Storage cuda(c10::Storage::use_byte_size_t(), 0,
                          c10::DataPtr(nullptr, c10::Device(c10::kCUDA, 0)), nullptr, false);
  EXPECT_THROW(make_alias_storage(cuda), c10::Error);
}

// Packed outputs copy raw bytes, so a view over them must carry the input's conj / neg bits to
// mean the same values.
TEST(Outputs, MakeViewKeepsTheMeaningOfConjugateAndNegativeInputs) {
  using namespace mtc::detail;
  const at::Tensor base = at::randint(256, {64}, at::kByte).view(at::kComplexFloat);  // 8 values
  c10::DataPtr data = c10::GetCPUAllocator()->allocate(64);
  std::memcpy(data.get(), base.const_data_ptr(), 64);
  const c10::Storage storage = make_storage(std::move(data), 64);

  const at::Tensor conj = base.conj();
  ASSERT_TRUE(conj.is_conj());
  const at::Tensor view = make_view(storage, 0, conj);
  EXPECT_TRUE(at::equal(view.resolve_conj(), conj.resolve_conj()) ||
              std::memcmp(view.resolve_conj().const_data_ptr(),
                          conj.resolve_conj().const_data_ptr(), 64) == 0)
      << "the conjugate bit was dropped";

  const at::Tensor real = at::randint(256, {64}, at::kByte).view(at::kFloat);
  c10::DataPtr data2 = c10::GetCPUAllocator()->allocate(64);
  std::memcpy(data2.get(), real.const_data_ptr(), 64);
  const c10::Storage storage2 = make_storage(std::move(data2), 64);
  const at::Tensor neg = at::_neg_view(real);
  ASSERT_TRUE(neg.is_neg());
  const at::Tensor nview = make_view(storage2, 0, neg);
  EXPECT_EQ(
      std::memcmp(nview.resolve_neg().const_data_ptr(), neg.resolve_neg().const_data_ptr(), 64), 0)
      << "the negative bit was dropped";
}

}  // namespace
