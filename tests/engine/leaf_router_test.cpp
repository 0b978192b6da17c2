// The engine's policy for the structure walk (LeafRouter), without a GPU: which leaves it packs,
// and how, which it defers and which it returns as they are.
#include "detail/leaf_router.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "detail/host_block_cache.h"
#include "detail/routes.h"
#include "leaf_router_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"
#include "test_constants.h"

namespace mtc::detail {
namespace {

using router_test::bytes_of;
using router_test::expect_layout;
using router_test::expect_routes;
using router_test::fake_on;
using router_test::filled;
using router_test::PackedItem;
using router_test::Route;
using router_test::Routed;
using router_test::small_mixed;
using router_test::small_mixed_routes;
using test::kCpu;
using test::kCuda0;
using test::kCuda1;
using test::kKiB;

// ---------------------------------------------------------------------------------------------
// Packing

TEST(LeafRouter, PacksSmallCpuTensorsIntoViewsOfOneChunk) {
  const c10::IValue in = small_mixed();
  Routed r(in, kCuda0);
  const std::vector<PackedItem> items = expect_routes(r, in, small_mixed_routes(Route::kPacked));
  const PackedChunks& packed = r.router.packed();
  ASSERT_EQ(packed.chunks.size(), 1u);
  expect_layout(packed, items, CopyOptions());
  // The default alignment (16) by hand: each item at the next multiple of 16.
  std::vector<int64_t> offsets;
  for (const PackedItem& item : items) offsets.push_back(item.offset);
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 16, 64, 80, 112, 128, 144, 160, 176, 208}));
  EXPECT_EQ(packed.chunks[0].bytes, 216);
  EXPECT_EQ(packed.chunks[0].staging, 0);
  EXPECT_EQ(packed.staging_bytes(), 216);
  EXPECT_EQ(r.stats.tensors, 11);
  EXPECT_EQ(r.stats.bytes, 148);
  EXPECT_EQ(r.stats.bytes, bytes_of(in));
  EXPECT_EQ(r.stats.reused, 1) << "the undefined leaf";
}

TEST(LeafRouter, EveryAlignmentRule) {
  // Below the element sizes, powers of two, and one that is not (12: lcm with 8 and 16).
  for (const int64_t alignment :
       {int64_t{1}, int64_t{4}, int64_t{12}, int64_t{64}, int64_t{4096}}) {
    SCOPED_TRACE(::testing::Message() << "alignment " << alignment);
    CopyOptions options;
    options.min_packed_alignment_bytes = alignment;
    const c10::IValue in = small_mixed();
    Routed r(in, kCuda0, options);
    const std::vector<PackedItem> items = expect_routes(r, in, small_mixed_routes(Route::kPacked));
    expect_layout(r.router.packed(), items, options);
    if (alignment == 1) {
      // Element sizes alone: the 8-byte long after 12 bytes of floats starts at 16.
      ASSERT_EQ(items.size(), 10u);
      EXPECT_EQ(items[1].offset, 16);
      EXPECT_EQ(items[2].offset, 56);  // bool right after it
    }
  }
}

TEST(LeafRouter, ChunksSplitAtTheChunkLimit) {
  CopyOptions options;
  options.max_packed_chunk_bytes = 1000;
  c10::impl::GenericList list(c10::AnyType::get());
  for (int i = 0; i < 10; ++i) list.push_back(filled(75, at::kFloat));  // 300 B: 3 to a chunk
  list.push_back(filled(1000, at::kByte));  // exactly the limit: a chunk of its own
  list.push_back(filled(1001, at::kByte));  // past it: deferred
  list.push_back(filled(1, at::kFloat));
  Routed r(list, kCuda0, options);
  std::vector<Route> routes(13, Route::kPacked);
  routes[11] = Route::kDeferred;
  const std::vector<PackedItem> items = expect_routes(r, list, routes);
  const PackedChunks& packed = r.router.packed();
  expect_layout(packed, items, options);
  std::vector<int64_t> bytes;
  std::vector<int64_t> staging;
  std::vector<size_t> first;
  for (const PackedChunks::Chunk& chunk : packed.chunks) {
    bytes.push_back(chunk.bytes);
    staging.push_back(chunk.staging);
    first.push_back(chunk.first_item);
  }
  EXPECT_EQ(bytes, (std::vector<int64_t>{908, 908, 908, 300, 1000, 4}));
  EXPECT_EQ(staging, (std::vector<int64_t>{0, 1024, 2048, 3072, 3584, 4608}));
  EXPECT_EQ(first, (std::vector<size_t>{0, 3, 6, 9, 10, 11}));
  EXPECT_EQ(packed.staging_bytes(), 4612);
  // Each chunk has a storage of its own.
  for (size_t c = 1; c < packed.chunks.size(); ++c)
    EXPECT_NE(packed.chunks[c].storage.unsafeGetStorageImpl(),
              packed.chunks[c - 1].storage.unsafeGetStorageImpl());
}

// ---------------------------------------------------------------------------------------------
// Deferred and reused leaves

TEST(LeafRouter, DefersWhatItDoesNotPack) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  dict.insert(std::string("small"), filled(4, at::kFloat));                 // 0
  dict.insert(std::string("empty"), filled(0, at::kFloat));                 // 1: 0 B
  dict.insert(std::string("transposed"), at::ones({5, 3}, at::kHalf).t());  // 2
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(dict);
  list.push_back(c10::ivalue::Tuple::create(
      {c10::IValue(at::arange(20, at::kLong).slice(0, 0, 20, 2)),  // 3: strided
       c10::IValue(filled(64 * kKiB + 1, at::kFloat)),             // 4: > 256 KiB
       c10::IValue(filled(64 * kKiB, at::kFloat))}));              // 5: 256 KiB
  list.push_back(at::zeros({3, 0, 2}, at::kLong));                 // 6: 0 B
  list.push_back(at::Tensor());                                    // 7
  list.push_back(filled(1, at::kByte));                            // 8
  list.push_back(at::ones({2, 8, 9, 3}).permute({0, 3, 1, 2}));    // 9: dense, not contiguous
  Routed r(list, kCuda0);
  const std::vector<Route> routes{
      Route::kPacked, Route::kDeferred, Route::kDeferred, Route::kDeferred, Route::kDeferred,
      Route::kPacked, Route::kDeferred, Route::kReused,   Route::kPacked,   Route::kDeferred};
  const std::vector<PackedItem> items = expect_routes(r, list, routes);
  expect_layout(r.router.packed(), items, CopyOptions());
  EXPECT_EQ(r.stats.tensors, 10);
  EXPECT_EQ(r.stats.bytes, bytes_of(list));
  EXPECT_EQ(r.stats.reused, 1);
}

TEST(LeafRouter, DefersTensorsLargerThanTheChunkLimit) {
  CopyOptions options;
  options.max_packed_chunk_bytes = 64 * kKiB;
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(filled(4, at::kFloat));
  list.push_back(filled(16 * kKiB, at::kFloat));      // exactly the limit
  list.push_back(filled(16 * kKiB + 1, at::kFloat));  // under 256 KiB but over the limit
  list.push_back(filled(4, at::kFloat));
  Routed r(list, kCuda0, options);
  const std::vector<PackedItem> items =
      expect_routes(r, list, {Route::kPacked, Route::kPacked, Route::kDeferred, Route::kPacked});
  expect_layout(r.router.packed(), items, options);
  EXPECT_EQ(r.router.packed().chunks.size(), 3u);
}

TEST(LeafRouter, PackingOffDefersEveryCpuLeaf) {
  CopyOptions options;
  options.pack_cpu_tensors = false;
  const c10::IValue in = small_mixed();
  Routed r(in, kCuda0, options);
  expect_routes(r, in, small_mixed_routes(Route::kDeferred));
  EXPECT_TRUE(r.router.packed().chunks.empty());
  EXPECT_EQ(r.stats.tensors, 11);
  EXPECT_EQ(r.stats.bytes, 148);
  EXPECT_EQ(r.stats.reused, 1);
}

// Bound for the CPU, small contiguous GPU tensors are packed as CPU ones are for a GPU: views
// of a CPU chunk with no memory yet (its storage resizable with the host block cache), the
// gather's descriptors in `copies`, the chunk tagged with its device. Non-contiguous, empty and
// large ones are deferred, and every one with packing off.
TEST(LeafRouter, PacksSmallGpuTensorsBoundForTheCpu) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(fake_on(kCuda0, filled(4, at::kFloat)));
  list.push_back(fake_on(kCuda0, filled(3, at::kDouble)));
  list.push_back(fake_on(kCuda0, at::ones({5, 3}).t()));               // not contiguous
  list.push_back(fake_on(kCuda0, filled(64 * kKiB + 1, at::kFloat)));  // over 256 KiB
  list.push_back(fake_on(kCuda0, filled(0, at::kInt)));                // no bytes
  list.push_back(fake_on(kCuda0, filled(2, at::kShort)));
  for (const bool pack : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "pack " << pack);
    CopyOptions options;
    options.pack_cpu_tensors = pack;
    Routed r(list, kCpu, options);
    const Route small = pack ? Route::kPacked : Route::kDeferred;
    const std::vector<PackedItem> items = expect_routes(
        r, list, {small, small, Route::kDeferred, Route::kDeferred, Route::kDeferred, small});
    const PackedChunks& packed = r.router.packed();
    EXPECT_EQ(r.stats.tensors, 6);
    EXPECT_EQ(r.stats.reused, 0);
    if (!pack) {
      EXPECT_TRUE(packed.chunks.empty());
      continue;
    }
    expect_layout(packed, items, options);
    ASSERT_EQ(packed.chunks.size(), 1u);
    const PackedChunks::Chunk& chunk = packed.chunks[0];
    EXPECT_EQ(chunk.source, kCuda0.index());
    EXPECT_EQ(chunk.storage.device(), kCpu);
    EXPECT_EQ(chunk.storage.data(), nullptr) << "memory before the submission";
    EXPECT_EQ(chunk.storage.allocator(), &HostBlockCache::instance());
    EXPECT_TRUE(chunk.storage.resizable());
  }
}

// A router packs the GPU tensors of one device, the first it packs from (a leaf it cannot pack
// does not choose it); the others' are deferred, for the route that packs them after the walk.
TEST(LeafRouter, PacksForTheCpuFromTheFirstDeviceItPacks) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(fake_on(kCuda1, filled(64 * kKiB + 1, at::kFloat)));
  list.push_back(fake_on(kCuda0, filled(4, at::kFloat)));
  list.push_back(fake_on(kCuda1, filled(4, at::kFloat)));
  list.push_back(fake_on(kCuda0, filled(8, at::kFloat)));
  Routed r(list, kCpu);
  expect_routes(r, list, {Route::kDeferred, Route::kPacked, Route::kDeferred, Route::kPacked});
  ASSERT_EQ(r.router.packed().chunks.size(), 1u);
  EXPECT_EQ(r.router.packed().chunks[0].source, kCuda0.index());
}

TEST(LeafRouter, CpuTargetReturnsEveryLeafAsItIs) {
  for (const bool pack : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "pack " << pack);
    CopyOptions options;
    options.pack_cpu_tensors = pack;
    c10::impl::GenericList list(c10::AnyType::get());
    list.push_back(small_mixed());
    list.push_back(filled(64 * kKiB + 1, at::kFloat));
    list.push_back(at::ones({5, 3}).t());
    list.push_back(filled(0, at::kInt));
    Routed r(list, kCpu, options);
    test::expect_same_structure(r.out, list, test::expect_same_tensor);
    EXPECT_TRUE(r.router.deferred().empty());
    EXPECT_TRUE(r.router.slots().empty());
    EXPECT_TRUE(r.router.packed().chunks.empty());
    EXPECT_TRUE(r.router.packed().copies.empty());
    EXPECT_EQ(r.stats.tensors, 14);
    EXPECT_EQ(r.stats.reused, 14);
    EXPECT_EQ(r.stats.bytes, bytes_of(list));
  }
}

// GPU leaves, stood for by tensors with no memory: returned as they are on the target's device,
// deferred from any other GPU, packed for the CPU (from the first device, see below).
TEST(LeafRouter, CudaLeavesAreReusedOnTheTargetAndDeferredElsewhere) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(fake_on(kCuda0, filled(4, at::kFloat)));
  list.push_back(fake_on(kCuda1, filled(4, at::kFloat)));
  list.push_back(filled(4, at::kFloat));
  struct Case {
    c10::Device target;
    std::vector<Route> routes;
  };
  const std::vector<Case> cases{{kCuda0, {Route::kReused, Route::kDeferred, Route::kPacked}},
                                {kCuda1, {Route::kDeferred, Route::kReused, Route::kPacked}},
                                {kCpu, {Route::kPacked, Route::kDeferred, Route::kReused}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target.str());
    Routed r(list, c.target);
    expect_routes(r, list, c.routes);
    EXPECT_EQ(r.stats.tensors, 3);
    EXPECT_EQ(r.stats.bytes, 48);
    EXPECT_EQ(r.stats.reused, 1);
  }
}

TEST(LeafRouter, DeferredBareTensorAtTheRoot) {
  const at::Tensor big = filled(64 * kKiB + 1, at::kFloat);
  Routed r(big, kCuda0);
  ASSERT_EQ(r.router.slots().size(), 1u);
  EXPECT_EQ(r.router.slots()[0], &r.out);
  EXPECT_TRUE(r.router.deferred()[0].is_same(big));
}

}  // namespace
}  // namespace mtc::detail
