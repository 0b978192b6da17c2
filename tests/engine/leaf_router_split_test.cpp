// LeafRouter in a walk split by root element (what CopyJob does for large structures), and the
// errors that name the leaf. Without a GPU.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "detail/leaf_router.h"
#include "detail/routes.h"
#include "detail/structure.h"
#include "leaf_router_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"
#include "test_constants.h"

namespace mtc::detail {
namespace {

using router_test::bytes_of;
using router_test::fake_on;
using router_test::filled;
using router_test::round_up;
using router_test::Routed;
using router_test::small_mixed;
using test::kCpu;
using test::kCuda0;
using test::kCuda1;
using test::kKiB;

// ---------------------------------------------------------------------------------------------
// A walk split by root element (what CopyJob does for large structures)

// The runs a GPU->CPU submission gathers at once: consecutive chunks of one device, each at the
// next multiple of the alignment, within the chunk limit; a chunk that reaches it alone is a run.
TEST(DeviceToHostRuns, ConsecutiveChunksOfOneDeviceWithinTheLimit) {
  const auto runs = [](const std::vector<std::pair<int64_t, c10::DeviceIndex>>& chunks,
                       int64_t max_bytes, int64_t alignment) {
    PackedChunks packed;
    for (const auto& [bytes, source] : chunks)
      packed.chunks.push_back({c10::Storage(), bytes, 0, 0, source});
    return device_to_host_runs(packed, max_bytes, alignment);
  };
  using Ends = std::vector<size_t>;
  EXPECT_EQ(runs({}, 1000, 16), Ends{});
  // A device change ends a run, also when the first device comes back.
  EXPECT_EQ(runs({{100, 0}, {100, 0}, {100, 1}, {100, 0}}, 1000, 16), (Ends{2, 3, 4}));
  // 100 bytes, then the next chunk at 112: 212 bytes fit a limit of 212, not of 211.
  EXPECT_EQ(runs({{100, 0}, {100, 0}, {100, 0}}, 212, 16), (Ends{2, 3}));
  EXPECT_EQ(runs({{100, 0}, {100, 0}, {100, 0}}, 211, 16), (Ends{1, 2, 3}));
  // A chunk at the limit, or past it (a single large tensor), is a run of its own.
  EXPECT_EQ(runs({{500, 0}, {10, 0}}, 100, 16), (Ends{1, 2}));
  // An alignment that is not a power of two: the second chunk starts at 400.
  EXPECT_EQ(runs({{10, 0}, {10, 0}}, 410, 400), (Ends{2}));
  EXPECT_EQ(runs({{10, 0}, {10, 0}}, 409, 400), (Ends{1, 2}));
}

// Routers of one walk may pack GPU tensors of different devices for the CPU: each chunk keeps its
// device through absorb(), so the submission gathers each device's chunks on that device.
TEST(LeafRouter, AbsorbKeepsEachChunksDevice) {
  CopyStats stats_a, stats_b;
  LeafRouter a(kCpu, CopyOptions(), stats_a);
  LeafRouter b(kCpu, CopyOptions(), stats_b);
  c10::IValue out_a, out_b;
  StructureCopier<LeafRouter>(a).copy(fake_on(kCuda0, filled(4, at::kFloat)), out_a);
  StructureCopier<LeafRouter>(b).copy(fake_on(kCuda1, filled(4, at::kFloat)), out_b);
  a.absorb(b);
  const PackedChunks& packed = a.packed();
  ASSERT_EQ(packed.chunks.size(), 2u);
  EXPECT_EQ(packed.chunks[0].source, kCuda0.index());
  EXPECT_EQ(packed.chunks[1].source, kCuda1.index());
  EXPECT_EQ(packed.chunks[1].first_item, 1u);
  EXPECT_TRUE(b.packed().chunks.empty());
}

// Root elements 0..2 walked by one router, 3..5 by another, then assembled and merged: the
// second router's chunks follow the first's in staging, its deferred leaves (one directly under
// the root) get their slots in the assembled root, and its counts are added.
TEST(LeafRouter, SplitWalkAssemblesAndMerges) {
  const at::Tensor big = filled(64 * kKiB + 1, at::kFloat);  // deferred: over 256 KiB
  c10::impl::GenericList root(c10::AnyType::get());
  root.push_back(small_mixed());
  root.push_back(filled(3, at::kInt));
  root.push_back(std::string("passthrough"));
  root.push_back(small_mixed());
  root.push_back(big);
  root.push_back(filled(5, at::kDouble));
  const c10::IValue in = root;
  using Copier = StructureCopier<LeafRouter>;
  CopyStats stats_a, stats_b;
  LeafRouter a(kCuda0, CopyOptions(), stats_a);
  LeafRouter b(kCuda0, CopyOptions(), stats_b);
  Copier copier_a(a), copier_b(b);
  const std::vector<const c10::IValue*> elements = Copier::elements_of(in);
  ASSERT_EQ(elements.size(), 6u);
  std::vector<c10::IValue> built(elements.size());
  for (uint32_t i = 0; i < 6; ++i) {
    LeafRouter& router = i < 3 ? a : b;
    router.begin_element(i);
    built[i] = (i < 3 ? copier_a : copier_b).copy_element(*elements[i], i);
  }
  c10::IValue out = Copier::assemble(in, built);
  copier_a.place_elements(out);
  copier_b.place_elements(out);
  const int64_t a_staging = a.packed().staging_bytes();
  const size_t a_items = a.packed().views.size();
  const size_t b_items = b.packed().views.size();
  ASSERT_EQ(a.packed().chunks.size(), 1u);
  ASSERT_EQ(b.packed().chunks.size(), 1u);
  ASSERT_EQ(b.deferred().size(), 1u);
  EXPECT_EQ(b.slots()[0], const_cast<c10::IValue*>(out.toListRef().data()) + 4);
  a.absorb(b);

  const PackedChunks& packed = a.packed();
  ASSERT_EQ(packed.chunks.size(), 2u);
  EXPECT_EQ(packed.chunks[1].staging, round_up(a_staging, kStagingAlignment));
  EXPECT_EQ(packed.chunks[1].first_item, a_items);
  ASSERT_EQ(packed.views.size(), a_items + b_items);
  ASSERT_EQ(packed.copies.size(), packed.views.size());
  for (size_t k = 0; k < packed.views.size(); ++k) {
    const PackedChunks::Chunk& chunk = packed.chunks[k < a_items ? 0 : 1];
    EXPECT_TRUE(packed.views[k]->storage().is_alias_of(chunk.storage)) << "item " << k;
    const int64_t offset = packed.views[k]->storage_offset() * packed.views[k]->dtype().itemsize();
    EXPECT_EQ(packed.copies[k].dst_offset, chunk.staging + offset) << "item " << k;
  }
  ASSERT_EQ(a.deferred().size(), 1u);
  EXPECT_TRUE(a.deferred()[0].is_same(big));
  EXPECT_TRUE(b.deferred().empty());
  EXPECT_TRUE(b.packed().chunks.empty());
  EXPECT_EQ(stats_a.tensors, 25);
  EXPECT_EQ(stats_a.bytes, bytes_of(in));
  EXPECT_EQ(stats_a.reused, 2) << "the two undefined leaves";
  EXPECT_EQ(stats_b.tensors, 0);

  // Every leaf landed in its place: packed views and passthroughs now, the deferred one after
  // the route (here: the input itself, through its slot).
  *a.slots()[0] = big;
  test::expect_same_structure(out, in, [](const at::Tensor& o, const at::Tensor& i, size_t) {
    if (!i.defined() || i.is_same(o)) return;
    EXPECT_EQ(o.device(), kCuda0);
    EXPECT_EQ(o.sizes(), i.sizes());
    EXPECT_EQ(o.dtype(), i.dtype());
  });
}

TEST(LeafRouter, SplitWalkErrorsNameTheRootElement) {
  const at::Tensor meta = at::empty({3}, at::TensorOptions().device(c10::kMeta));
  c10::impl::GenericList element(c10::AnyType::get());
  element.push_back(filled(2, at::kFloat));
  element.push_back(meta);
  CopyStats stats;
  LeafRouter router(kCuda0, CopyOptions(), stats);
  StructureCopier<LeafRouter> copier(router);
  // The first element only opens the walk; its copy is not looked at.
  static_cast<void>(copier.copy_element(filled(1, at::kFloat), 0));
  router.begin_element(7);
  try {
    copier.copy_element(element, 7);
    ADD_FAILURE() << "no exception";
  } catch (const c10::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("tensor leaf 1 of root element 7"), std::string::npos) << what;
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(LeafRouter, UnsupportedLeavesThrowNamingTheLeaf) {
  const at::Tensor sparse = at::sparse_coo_tensor(at::zeros({1, 2}, at::kLong), at::ones({2}), {4});
  const at::Tensor meta = at::empty({3}, at::TensorOptions().device(c10::kMeta));
  struct Case {
    at::Tensor leaf;
    std::string fragment;
  };
  for (const Case& c : {Case{sparse, "layout"}, Case{meta, "only cpu and cuda"}}) {
    for (const c10::Device& target : {kCuda0, kCpu}) {
      SCOPED_TRACE(target.str() + ", " + c.fragment);
      c10::impl::GenericList list(c10::AnyType::get());
      list.push_back(filled(2, at::kFloat));
      list.push_back(
          c10::ivalue::Tuple::create({c10::IValue(filled(2, at::kFloat)), c10::IValue(c.leaf)}));
      try {
        Routed r(list, target);
        ADD_FAILURE() << "no exception";
      } catch (const c10::Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("tensor leaf 2"), std::string::npos) << what;
        EXPECT_NE(what.find(c.fragment), std::string::npos) << what;
      }
    }
  }
}

}  // namespace
}  // namespace mtc::detail
