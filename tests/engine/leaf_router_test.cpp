// The engine's policy for the structure walk (LeafRouter), without a GPU: for a CUDA target the
// walk makes no CUDA call, so packed outputs (views of chunk storages with no device memory
// yet), the staging plan, deferred leaves and their slots are all checked here. Nothing reads
// an output's data.
#include "detail/leaf_router.h"
#include "detail/outputs.h"
#include "detail/routes.h"
#include "detail/structure.h"
#include "mtc/copier.h"

#include "structure_compare.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace mtc::detail {
namespace {

constexpr int64_t kKiB = 1024;
const c10::Device kCpu(c10::kCPU);
const c10::Device kCuda0(c10::kCUDA, 0);
const c10::Device kCuda1(c10::kCUDA, 1);

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

at::Tensor filled(int64_t numel, at::ScalarType dtype) {
  return at::ones({numel}, at::TensorOptions().dtype(dtype));
}

// A tensor on `device` with no memory behind it: the walk reads only a leaf's metadata, so this
// stands for a GPU tensor on a machine without one.
at::Tensor fake_on(const c10::Device& device, const at::Tensor& like) {
  return make_view(make_storage(c10::DataPtr(nullptr, device), 0), 0, like);
}

// One walk with the engine's policy, as a copy job runs it.
struct Routed {
  Routed(const c10::IValue& in, c10::Device to, const CopyOptions& options = CopyOptions())
      : target(to), router(to, options, stats) {
    StructureCopier<LeafRouter>(router).copy(in, out);
  }
  c10::Device target;
  CopyStats stats;
  LeafRouter router;
  c10::IValue out;
};

enum class Route { kPacked, kDeferred, kReused };

struct PackedItem {
  size_t chunk;
  int64_t offset;  // from the chunk's start
  int64_t bytes;
  int64_t element_size;
};

// Packed item `k` is output `o` of input `i`: a view on the target with the input's dtype,
// sizes, strides and math bits over its chunk's storage, and a staging copy from the input to
// the chunk's staging start plus the view's offset.
PackedItem expect_packed_view(Routed& r, size_t k, const at::Tensor& o, const at::Tensor& i) {
  const PackedChunks& packed = r.router.packed();
  size_t chunk = 0;
  while (chunk + 1 < packed.chunks.size() && packed.chunks[chunk + 1].first_item <= k) ++chunk;
  EXPECT_EQ(o.device(), r.target);
  EXPECT_EQ(o.scalar_type(), i.scalar_type());
  EXPECT_EQ(o.sizes(), i.sizes());
  EXPECT_EQ(o.strides(), i.strides());
  EXPECT_EQ(o.is_conj(), i.is_conj());
  EXPECT_EQ(o.is_neg(), i.is_neg());
  EXPECT_EQ(o.unsafeGetTensorImpl(), packed.views[k]) << "packed().views out of item order";
  EXPECT_EQ(o.storage().unsafeGetStorageImpl(), packed.chunks[chunk].storage.unsafeGetStorageImpl())
      << "item " << k << " is not a view of chunk " << chunk;
  const auto element_size = static_cast<int64_t>(i.element_size());
  const int64_t offset = o.storage_offset() * element_size;
  const auto bytes = static_cast<int64_t>(i.nbytes());
  const StagingCopy& copy = packed.copies[k];
  EXPECT_EQ(copy.src, i.const_data_ptr());
  EXPECT_EQ(copy.dst_offset, packed.chunks[chunk].staging + offset);
  EXPECT_EQ(copy.bytes, bytes);
  return {chunk, offset, bytes, element_size};
}

// Every leaf of `in` took `routes[leaf]`; `items` receives the packed ones' places, in order.
// A deferred leaf is in deferred() in leaf order and its slot is where the leaf is in the
// output: the slots are filled with markers here to see that. A reused leaf is the input.
void check_routes(Routed& r, const c10::IValue& in, const std::vector<Route>& routes,
                  std::vector<PackedItem>& items) {
  const PackedChunks& packed = r.router.packed();
  const std::vector<at::Tensor>& deferred = r.router.deferred();
  const std::vector<c10::IValue*>& slots = r.router.slots();
  const auto count = [&routes](Route route) {
    return static_cast<size_t>(std::count(routes.begin(), routes.end(), route));
  };
  ASSERT_EQ(deferred.size(), count(Route::kDeferred));
  ASSERT_EQ(slots.size(), deferred.size());
  ASSERT_EQ(packed.copies.size(), count(Route::kPacked));
  ASSERT_EQ(packed.views.size(), count(Route::kPacked));
  std::vector<at::Tensor> markers;
  for (c10::IValue* slot : slots) {
    ASSERT_NE(slot, nullptr) << "a deferred leaf was never placed";
    EXPECT_TRUE(slot->isNone()) << "the walk wrote a deferred leaf's output";
    markers.push_back(at::full({1}, -1.0 - static_cast<double>(markers.size())));
    *slot = markers.back();
  }
  size_t d = 0;
  size_t k = 0;
  const size_t leaves = test::expect_same_structure(
      r.out, in, [&](const at::Tensor& o, const at::Tensor& i, size_t leaf) {
        ASSERT_LT(leaf, routes.size());
        switch (routes[leaf]) {
          case Route::kReused:
            EXPECT_TRUE(o.is_same(i)) << "leaf " << leaf << " should be returned as it is";
            break;
          case Route::kDeferred:
            EXPECT_TRUE(deferred[d].is_same(i)) << "deferred() out of leaf order at leaf " << leaf;
            EXPECT_TRUE(o.is_same(markers[d]))
                << "slot " << d << " is not where leaf " << leaf << " is";
            ++d;
            break;
          case Route::kPacked:
            items.push_back(expect_packed_view(r, k++, o, i));
            break;
        }
      });
  EXPECT_EQ(leaves, routes.size());
}

std::vector<PackedItem> expect_routes(Routed& r, const c10::IValue& in,
                                      const std::vector<Route>& routes) {
  std::vector<PackedItem> items;
  check_routes(r, in, routes, items);
  return items;
}

// The layout rules, item by item: each at the first multiple of lcm(alignment, element size)
// (max of the two for powers of two) after the previous one in its chunk; a new chunk only when
// the item would end past the limit; chunks staged one after the other, each at a multiple of
// kStagingAlignment.
void expect_layout(const PackedChunks& packed, const std::vector<PackedItem>& items,
                   const CopyOptions& options) {
  int64_t end = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    SCOPED_TRACE(::testing::Message() << "item " << k);
    const PackedItem& item = items[k];
    const int64_t unit = std::lcm(options.min_packed_alignment_bytes, item.element_size);
    EXPECT_EQ(item.offset % unit, 0) << "misaligned for element size " << item.element_size;
    if (k == 0 || item.chunk != items[k - 1].chunk) {
      EXPECT_EQ(item.chunk, k == 0 ? 0 : items[k - 1].chunk + 1);
      EXPECT_EQ(item.offset, 0);
      EXPECT_EQ(packed.chunks[item.chunk].first_item, k);
      if (k > 0) {
        EXPECT_GT(round_up(end, unit) + item.bytes, options.max_packed_chunk_bytes)
            << "chunk closed early";
      }
    } else {
      EXPECT_EQ(item.offset, round_up(end, unit)) << "not packed tight";
    }
    end = item.offset + item.bytes;
    EXPECT_LE(end, options.max_packed_chunk_bytes);
    if (k + 1 == items.size() || items[k + 1].chunk != item.chunk) {
      EXPECT_EQ(packed.chunks[item.chunk].bytes, end)
          << "a chunk's payload ends with its last item";
    }
  }
  ASSERT_EQ(packed.chunks.size(), items.empty() ? 0 : items.back().chunk + 1);
  int64_t staging = 0;
  for (const PackedChunks::Chunk& chunk : packed.chunks) {
    EXPECT_EQ(chunk.staging % kStagingAlignment, 0);
    EXPECT_EQ(chunk.staging, staging) << "chunks not staged back to back";
    staging = round_up(chunk.staging + chunk.bytes, kStagingAlignment);
  }
  if (!packed.chunks.empty()) {
    EXPECT_EQ(packed.staging_bytes(), packed.chunks.back().staging + packed.chunks.back().bytes);
  }
}

int64_t bytes_of(const c10::IValue& v) {
  int64_t bytes = 0;
  for (const at::Tensor& t : test::tensors_of(v))
    if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

// Small contiguous tensors of every element size in every container kind, a conjugate and a
// negative view among them, and an undefined leaf (leaf 9).
c10::IValue small_mixed() {
  c10::impl::GenericDict by_name(c10::StringType::get(), c10::TensorType::get());
  by_name.insert(std::string("ids"), filled(5, at::kLong));   // 1: 40 B
  by_name.insert(std::string("mask"), filled(7, at::kBool));  // 2: 7 B
  c10::impl::GenericDict by_int(c10::IntType::get(), c10::AnyType::get());
  by_int.insert(int64_t{2}, filled(13, at::kByte));                  // 5: 13 B
  by_int.insert(int64_t{-1}, filled(1, at::kComplexDouble).conj());  // 6: 16 B
  c10::List<at::Tensor> typed;
  typed.push_back(at::_neg_view(filled(2, at::kFloat)));  // 7: 8 B
  typed.push_back(filled(9, at::kShort));                 // 8: 18 B
  typed.push_back(at::Tensor());                          // 9: undefined
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(filled(3, at::kFloat));  // 0: 12 B
  list.push_back(by_name);
  list.push_back(c10::ivalue::Tuple::create({c10::IValue(at::ones({3, 3}, at::kHalf)),  // 3: 18 B
                                             c10::IValue(at::full({}, 2.0, at::kDouble)),  // 4: 8 B
                                             c10::IValue(std::string("s"))}));
  list.push_back(by_int);
  list.push_back(typed);
  list.push_back(at::ones({2, 2}, at::kBFloat16));  // 10: 8 B
  return list;
}

std::vector<Route> small_mixed_routes(Route small) {
  std::vector<Route> routes(11, small);
  routes[9] = Route::kReused;
  return routes;
}

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
// deferred (never packed, however small) from any other.
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
                                {kCpu, {Route::kDeferred, Route::kDeferred, Route::kReused}}};
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

// ---------------------------------------------------------------------------------------------
// A walk split by root element (what CopyJob does for large structures)

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
  c10::IValue(copier.copy_element(filled(1, at::kFloat), 0));
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
