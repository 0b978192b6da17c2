// The chain that has each packed output's free ask for the lines of the output kFreeAhead further
// on in its structure (chain_for_free, detail/outputs.h). What must hold: a walk chains its own
// outputs in the structure's order and nothing else, the setting turns it off, and a result
// freed in any order (a chained output freed before the one that points at it) stays sound: run
// under AddressSanitizer in CI, where a write through a stale link would be reported. Runs
// without a GPU: a CUDA target's walk makes no CUDA call.
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "detail/outputs.h"
#include "detail/prefetch.h"
#include "leaf_router_test_support.h"

namespace {

using mtc::detail::chain_for_free;
using mtc::detail::chained_for_free;
using mtc::detail::kFreeAhead;
using mtc::detail::set_free_ahead;
using mtc::detail::router_test::Routed;

// A list of `n` small float tensors, each packed for a CUDA target.
c10::IValue list_of(int64_t n) {
  c10::impl::GenericList list(c10::TensorType::get());
  for (int64_t i = 0; i < n; ++i) list.push_back(at::ones({i + 1}, at::kFloat));
  return list;
}

const c10::Device kGpu(c10::kCUDA, 0);

// Turns the setting back on at the end of a test, whatever it did.
struct FreeAheadOn {
  ~FreeAheadOn() { set_free_ahead(true); }
};

TEST(FreeAhead, AWalkChainsEachPackedOutputToTheOneItsFreeReachesLater) {
  const FreeAheadOn restore;
  set_free_ahead(true);
  const Routed r(list_of(10), kGpu);
  const c10::List<c10::IValue> out = r.out.toList();
  ASSERT_EQ(out.size(), 10u);
  for (size_t i = 0; i < out.size(); ++i) {
    const c10::TensorImpl& impl = *out.get(i).toTensor().unsafeGetTensorImpl();
    const void* expected = i + kFreeAhead < out.size()
                               ? out.get(i + kFreeAhead).toTensor().unsafeGetTensorImpl()
                               : nullptr;
    EXPECT_EQ(chained_for_free(impl), expected) << "output " << i;
  }
}

TEST(FreeAhead, TurnedOffNothingIsChained) {
  const FreeAheadOn restore;
  set_free_ahead(false);
  const Routed r(list_of(8), kGpu);
  for (const c10::IValue& v : r.out.toList().vec())
    EXPECT_EQ(chained_for_free(*v.toTensor().unsafeGetTensorImpl()), nullptr);
}

TEST(FreeAhead, TensorsNotMadeByTheEngineAreNeverChained) {
  const FreeAheadOn restore;
  set_free_ahead(true);
  const Routed r(list_of(2), kGpu);
  const at::Tensor engine_made = r.out.toList().get(0).toTensor();
  const at::Tensor plain = at::zeros({3});
  chain_for_free(plain.unsafeGetTensorImpl(), engine_made.unsafeGetTensorImpl());
  chain_for_free(engine_made.unsafeGetTensorImpl(), plain.unsafeGetTensorImpl());
  EXPECT_EQ(chained_for_free(*plain.unsafeGetTensorImpl()), nullptr);
  EXPECT_EQ(chained_for_free(*engine_made.unsafeGetTensorImpl()), nullptr)
      << "output 0 of two has nothing kFreeAhead further on, and a plain tensor is no link";
  chain_for_free(nullptr, engine_made.unsafeGetTensorImpl());  // no effect, no crash
}

// An output taken back for a new result (reuse_as_view) comes unchained, as a new one does: its
// link named an output of the result it left, which its new structure does not free after it.
TEST(FreeAhead, AReusedOutputComesUnchained) {
  const FreeAheadOn restore;
  set_free_ahead(true);
  const c10::Storage storage = at::zeros({4096}, at::kByte).storage();
  const at::Tensor like = at::ones({4}, at::kFloat);
  at::Tensor earlier = mtc::detail::make_view(storage, 0, like);
  const at::Tensor later = mtc::detail::make_view(storage, 64, like);
  chain_for_free(earlier.unsafeGetTensorImpl(), later.unsafeGetTensorImpl());
  ASSERT_EQ(chained_for_free(*earlier.unsafeGetTensorImpl()), later.unsafeGetTensorImpl());
  std::vector<c10::Storage> released;
  ASSERT_TRUE(mtc::detail::reuse_as_view(*earlier.unsafeGetTensorImpl(), storage, 128, like,
                                         c10::Device(c10::kCPU), released));
  EXPECT_EQ(chained_for_free(*earlier.unsafeGetTensorImpl()), nullptr);
}

// Freed in a shuffled order, many outputs die after the output their predecessor points at:
// their frees then ask for the lines of freed blocks, which must be harmless.
TEST(FreeAhead, AResultFreedInAnyOrderStaysSound) {
  const FreeAheadOn restore;
  set_free_ahead(true);
  for (int round = 0; round < 20; ++round) {
    std::vector<at::Tensor> outputs;
    {
      const Routed r(list_of(64), kGpu);
      for (const c10::IValue& v : r.out.toList().vec()) outputs.push_back(v.toTensor());
    }
    std::mt19937 rng(static_cast<unsigned>(round));
    std::shuffle(outputs.begin(), outputs.end(), rng);
    while (!outputs.empty()) outputs.pop_back();
    // The blocks went back to the pool: the next walk takes them, chains them anew.
    const Routed again(list_of(16), kGpu);
    EXPECT_EQ(again.out.toList().size(), 16u);
  }
}

}  // namespace
