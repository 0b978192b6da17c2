#include "leaf_router_test_support.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "detail/outputs.h"
#include "structure_compare.h"

namespace mtc::detail::router_test {
namespace {

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

}  // namespace

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

at::Tensor filled(int64_t numel, at::ScalarType dtype) {
  return at::ones({numel}, at::TensorOptions().dtype(dtype));
}

at::Tensor fake_on(const c10::Device& device, const at::Tensor& like) {
  return make_view(make_storage(c10::DataPtr(nullptr, device), 0), 0, like);
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

}  // namespace mtc::detail::router_test
