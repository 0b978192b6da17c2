// What LeafRouter's tests share: one walk with the engine's policy, as a copy job runs it, and the
// checks of every leaf's route and of the packed layout. For a CUDA target the walk makes no CUDA
// call, so packed outputs (views of chunk storages with no device memory yet), the staging plan,
// deferred leaves and their slots are all checked without a GPU. Nothing reads an output's data.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "detail/leaf_router.h"
#include "detail/routes.h"
#include "detail/structure.h"
#include "mtc/copier.h"

namespace mtc::detail::router_test {

// v rounded up to a multiple of m.
int64_t round_up(int64_t v, int64_t m);
// A 1-d tensor of `numel` ones of `dtype`.
at::Tensor filled(int64_t numel, at::ScalarType dtype);
// A tensor on `device` with no memory behind it: the walk reads only a leaf's metadata, so this
// stands for a GPU tensor on a machine without one.
at::Tensor fake_on(const c10::Device& device, const at::Tensor& like);

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

// Every leaf of `in` took `routes[leaf]`; `items` receives the packed ones' places, in order.
// A deferred leaf is in deferred() in leaf order and its slot is where the leaf is in the
// output: the slots are filled with markers here to see that. A reused leaf is the input.
std::vector<PackedItem> expect_routes(Routed& r, const c10::IValue& in,
                                      const std::vector<Route>& routes);

// The layout rules, item by item: each at the first multiple of lcm(alignment, element size)
// (max of the two for powers of two) after the previous one in its chunk; a new chunk only when
// the item would end past the limit; chunks staged one after the other, each at a multiple of
// kStagingAlignment.
void expect_layout(const PackedChunks& packed, const std::vector<PackedItem>& items,
                   const CopyOptions& options);

// The bytes of the tensor leaves of `v`.
int64_t bytes_of(const c10::IValue& v);

// Small contiguous tensors of every element size in every container kind, a conjugate and a
// negative view among them, and an undefined leaf (leaf 9).
c10::IValue small_mixed();
// The routes of small_mixed()'s leaves: `small` for every defined one.
std::vector<Route> small_mixed_routes(Route small);

}  // namespace mtc::detail::router_test
