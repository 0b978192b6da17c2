// Which offered outputs the engine makes into new ones (reuse_as_view, detail/outputs.h), on CPU
// storages: the same rules as for the CUDA outputs a copy to a GPU reuses (copier_gpu_reuse_test
// runs those through start_copy). Runs without a GPU.
#include <ATen/core/Tensor.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/intrusive_ptr.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "detail/outputs.h"
#include "test_constants.h"

namespace {

using mtc::detail::make_view;
using mtc::detail::reuse_as_view;
using mtc::test::kCpu;

c10::Storage cpu_storage(int64_t bytes) { return at::zeros({bytes}, at::kByte).storage(); }

// An output as the engine makes it: a float view of 12 elements at the start of its own storage.
at::Tensor engine_output(const c10::Storage& storage) {
  return make_view(storage, 0, at::zeros({3, 4}, at::kFloat));
}

struct Offer {
  c10::Storage chunk = cpu_storage(1024);
  at::Tensor like = at::zeros({2, 5}, at::kFloat);
  std::vector<c10::Storage> released;
  // Offers `out`'s TensorImpl for `like` at byte 64 of `chunk`.
  bool to(at::Tensor& out, c10::Device target = kCpu) {
    return reuse_as_view(*out.unsafeGetTensorImpl(), chunk, 64, like, target, released);
  }
};

TEST(OutputReuse, AnOutputHeldOnceBecomesTheNewOutput) {
  const c10::Storage old = cpu_storage(256);
  at::Tensor out = engine_output(old);
  out.add_(1);  // version 1
  Offer offer;
  offer.like = at::_neg_view(at::zeros({2, 5}, at::kFloat));
  ASSERT_TRUE(offer.to(out));
  EXPECT_TRUE(out.storage().is_alias_of(offer.chunk));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(out.storage_offset(), 64 / 4);
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_EQ(out._version(), 0);
  EXPECT_TRUE(out.is_neg());
  // The storage it had is kept for the caller to free.
  ASSERT_EQ(offer.released.size(), 1u);
  EXPECT_TRUE(offer.released[0].is_alias_of(old));
}

TEST(OutputReuse, NonContiguousLeavesKeepTheirStrides) {
  const c10::Storage old = cpu_storage(256);
  at::Tensor out = engine_output(old);
  Offer offer;
  offer.like = at::zeros({4, 3}, at::kFloat).t();
  ASSERT_TRUE(offer.to(out));
  EXPECT_EQ(out.sizes(), offer.like.sizes());
  EXPECT_EQ(out.strides(), offer.like.strides());
}

// Outputs that shared a storage leave it once to `released`, not once each.
TEST(OutputReuse, AStorageSharedByConsecutiveOutputsIsKeptOnce) {
  const c10::Storage old = cpu_storage(256);
  at::Tensor a = engine_output(old);
  at::Tensor b = engine_output(old);
  Offer offer;
  ASSERT_TRUE(offer.to(a));
  ASSERT_TRUE(offer.to(b));
  EXPECT_EQ(offer.released.size(), 1u);
}

// Every offer that must be declined leaves the TensorImpl as it was: storage, sizes, version.
TEST(OutputReuse, OutputsSomethingElseCanSeeAreDeclined) {
  const c10::Storage old = cpu_storage(256);
  auto expect_declined = [&](at::Tensor& out, c10::Device target, const char* why) {
    const std::vector<int64_t> sizes(out.sizes().begin(), out.sizes().end());
    const c10::StorageImpl* storage = out.storage().unsafeGetStorageImpl();
    Offer offer;
    EXPECT_FALSE(offer.to(out, target)) << why;
    EXPECT_EQ(out.storage().unsafeGetStorageImpl(), storage) << why;
    EXPECT_EQ(std::vector<int64_t>(out.sizes().begin(), out.sizes().end()), sizes) << why;
    EXPECT_TRUE(offer.released.empty()) << why;
  };
  {
    at::Tensor out = engine_output(old);
    const at::Tensor second = out;
    expect_declined(out, kCpu, "a second reference");
  }
  {
    at::Tensor out = engine_output(old);
    const c10::weak_intrusive_ptr<c10::TensorImpl> weak(out.getIntrusivePtr());
    expect_declined(out, kCpu, "a weak reference");
  }
  {
    at::Tensor out = engine_output(old);
    out.set_requires_grad(true);
    expect_declined(out, kCpu, "autograd metadata");
  }
  {
    at::Tensor out = engine_output(old);
    // A detached alias shares the version counter, not the TensorImpl.
    const at::Tensor alias = out.detach();
    expect_declined(out, kCpu, "a version counter shared with an alias");
  }
  {
    at::Tensor out = make_view(old, 0, at::zeros({3}, at::kInt));
    expect_declined(out, kCpu, "another dtype");
  }
  {
    at::Tensor out = engine_output(old);
    expect_declined(out, c10::Device(c10::kCUDA, 0), "another device");
  }
  {
    at::Tensor out = at::empty({3, 4}, at::kFloat);
    expect_declined(out, kCpu, "not an output of the engine");
  }
}

// Inference outputs are reused inside InferenceMode only, and other outputs outside it only.
TEST(OutputReuse, OutputsMatchTheInferenceMode) {
  const c10::Storage old = cpu_storage(256);
  for (const bool made_inference : {false, true}) {
    for (const bool reuse_inference : {false, true}) {
      at::Tensor out;
      {
        const c10::InferenceMode mode(made_inference);
        out = engine_output(old);
      }
      const c10::InferenceMode mode(reuse_inference);
      Offer offer;
      EXPECT_EQ(offer.to(out), made_inference == reuse_inference)
          << "made in inference mode " << made_inference << ", reused in it " << reuse_inference;
    }
  }
}

}  // namespace
