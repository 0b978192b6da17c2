// The version counters of output tensors: outputs stay ordinary tensors (the keys a plain
// TensorImpl gets, version 0, autograd works), a counter comes back only from an output that held
// it alone, and counters move between threads in batches. Runs without a GPU.
#include "detail/version_pool.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/ones.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "detail/impl_pool.h"
#include "detail/outputs.h"

namespace {

using mtc::detail::make_view;
namespace impl_pool = mtc::detail::impl_pool;
namespace version_pool = mtc::detail::version_pool;

// Turns the pool back on however a test ends.
struct PoolOnAtEnd {
  ~PoolOnAtEnd() { version_pool::set_enabled(true); }
};

// An output must be indistinguishable from a tensor torch made: same dispatch keys (autograd's
// among them), a version counter of its own at 0, not an inference tensor.
TEST(VersionPool, OutputsHaveTheKeysAndCounterOfAPlainTensor) {
  const at::Tensor like = at::ones({4});
  for (const c10::Device device : {c10::Device(c10::kCPU), c10::Device(c10::kCUDA, 0)}) {
    SCOPED_TRACE(device.str());
    // Metadata only: no byte of a CUDA storage is read, so no GPU is needed.
    const c10::Storage storage(c10::Storage::use_byte_size_t(), 16,
                               c10::DataPtr(like.data_ptr(), device), nullptr, false);
    const c10::DispatchKey backend =
        device.is_cuda() ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU;
    const auto plain = c10::make_intrusive<c10::TensorImpl>(
        c10::Storage(storage), c10::DispatchKeySet(backend), like.dtype());
    const at::Tensor out = make_view(storage, 0, like);
    EXPECT_EQ(out.key_set(), plain->key_set());
    EXPECT_FALSE(out.is_inference());
    EXPECT_TRUE(out.unsafeGetTensorImpl()->version_counter().enabled());
    EXPECT_EQ(out._version(), 0U);
  }
}

TEST(VersionPool, OutputsWorkWithAutogradAndCountInPlaceUpdates) {
  const at::Tensor like = at::ones({4});
  const at::Tensor storage_owner = at::ones({4});
  at::Tensor out = make_view(storage_owner.storage(), 0, like);
  out.add_(1);
  EXPECT_EQ(out._version(), 1U);
  out.requires_grad_(true);
  (out * out).sum().backward();
  EXPECT_TRUE(out.grad().equal(2 * out.detach()));
}

TEST(VersionPool, OutputsMadeInInferenceModeAreInferenceTensors) {
  const at::Tensor like = at::ones({4});
  const c10::InferenceMode guard;
  const at::Tensor out = make_view(like.storage(), 0, like);
  EXPECT_TRUE(out.is_inference());
}

// Outputs given back with a bumped version are handed out again at 0.
TEST(VersionPool, AGivenBackCounterComesBackAtVersionZero) {
  std::thread([] {  // a thread of its own: its list starts empty
    c10::VariableVersion counter(0);
    counter.bump();
    counter.bump();
    version_pool::give_back(std::move(counter));
    EXPECT_FALSE(counter.enabled());  // kept by the pool
    const c10::VariableVersion again = version_pool::take();
    EXPECT_TRUE(again.enabled());
    EXPECT_EQ(again.current_version(), 0U);
  })
      .join();
}

// A counter another tensor shares (a view of the output) stays with its holders: reusing it
// would tie the view's version to an unrelated new output. It is kept when given back (nothing
// reads it there), but take() never hands it out while it is shared.
TEST(VersionPool, ASharedCounterIsNeverHandedOut) {
  std::thread([] {
    c10::VariableVersion counter(0);
    c10::VariableVersion view_of_it = counter;
    version_pool::give_back(std::move(counter));
    EXPECT_FALSE(counter.enabled());  // kept, without being read
    const c10::VariableVersion taken = version_pool::take();
    ASSERT_TRUE(taken.enabled());
    EXPECT_TRUE(taken.unique());
    view_of_it.bump();
    EXPECT_EQ(taken.current_version(), 0U);  // another counter than the view's
    EXPECT_TRUE(view_of_it.unique());        // the pool let go of its reference
    c10::VariableVersion disabled;
    version_pool::give_back(std::move(disabled));
    EXPECT_FALSE(disabled.enabled());
  }).join();
}

TEST(VersionPool, AViewOfAFreedOutputKeepsItsCounterToItself) {
  const at::Tensor like = at::ones({4});
  const at::Tensor storage_owner = at::ones({4});
  at::Tensor view;
  {
    const at::Tensor out = make_view(storage_owner.storage(), 0, like);
    view = out.view({2, 2});  // shares out's counter
  }
  for (int i = 0; i < 4; ++i) {
    at::Tensor next = make_view(storage_owner.storage(), 0, like);
    next.add_(1);
    EXPECT_EQ(next._version(), 1U);
  }
  EXPECT_EQ(view._version(), 0U);
  view.add_(1);
  EXPECT_EQ(view._version(), 1U);
}

// Counters a thread gives back beyond two batches go to the shared list in whole batches, where
// another thread takes them; a thread that exits hands over its whole batches.
TEST(VersionPool, CountersMoveBetweenThreadsInBatches) {
  constexpr int64_t kCount = 1000;
  const auto batch = static_cast<int64_t>(version_pool::kBatch);
  const int64_t before = version_pool::shared_counters();
  std::thread([] {
    for (int64_t i = 0; i < kCount; ++i) version_pool::give_back(c10::VariableVersion(0));
  }).join();
  const int64_t handed = version_pool::shared_counters() - before;
  EXPECT_GE(handed, kCount - batch);
  EXPECT_EQ(handed % batch, 0);
  std::thread([&] {
    std::vector<c10::VariableVersion> taken;
    for (int64_t i = 0; i < handed; ++i) taken.push_back(version_pool::take());
    for (const c10::VariableVersion& c : taken) EXPECT_EQ(c.current_version(), 0U);
    EXPECT_LE(version_pool::shared_counters(), before);
  }).join();
}

// With the TensorImpl pool's shards on (the default), a freed output's counter goes back to the
// shard the output was made in, whichever thread frees it: a GPU's workers take back the
// counters of their results even when a thread that copies nothing frees them.
TEST(VersionPool, CountersGoBackToTheShardTheirOutputWasMadeIn) {
  ASSERT_TRUE(impl_pool::sharded()) << "the shards are on by default";
  constexpr size_t kMaker = 5;
  constexpr size_t kFreer = 9;
  const auto batch = static_cast<int64_t>(version_pool::kBatch);
  const at::Tensor like = at::ones({2});
  std::vector<at::Tensor> made;
  std::thread([&] {
    impl_pool::set_thread_shard(kMaker);
    for (int64_t i = 0; i < 3 * batch; ++i) made.push_back(make_view(like.storage(), 0, like));
  }).join();
  const int64_t maker_before = version_pool::shared_counters_in(kMaker);
  const int64_t freer_before = version_pool::shared_counters_in(kFreer);
  std::thread([&] {
    impl_pool::set_thread_shard(kFreer);
    made.clear();
  }).join();
  // Whole batches went to the maker's shard at once; none to the freeing thread's, and none was
  // left waiting on the freeing thread.
  EXPECT_EQ(version_pool::shared_counters_in(kMaker), maker_before + 3 * batch);
  EXPECT_EQ(version_pool::shared_counters_in(kFreer), freer_before);
  // Given back by hand, a counter goes to the shard named.
  std::thread([&] {
    impl_pool::set_thread_shard(kFreer);
    for (int64_t i = 0; i < batch; ++i) version_pool::give_back(c10::VariableVersion(0), kMaker);
  }).join();
  EXPECT_EQ(version_pool::shared_counters_in(kMaker), maker_before + 4 * batch);
  EXPECT_EQ(version_pool::shared_counters_in(kFreer), freer_before);
}

// Counters of a shard given back while the thread was in another wait there for a whole batch;
// once the thread is back in their shard they are its own again: with them, two batches' worth of
// given-back counters overflow its list and hand one batch on.
TEST(VersionPool, AThreadBackInAShardTakesItsWaitingCounters) {
  ASSERT_TRUE(impl_pool::sharded()) << "the shards are on by default";
  constexpr size_t kFirst = 6;
  constexpr size_t kSecond = 10;
  constexpr int64_t kWaiting = 10;
  const auto batch = static_cast<int64_t>(version_pool::kBatch);
  std::thread([&] {
    impl_pool::set_thread_shard(kFirst);
    for (int64_t i = 0; i < kWaiting; ++i)
      version_pool::give_back(c10::VariableVersion(0), kSecond);
    impl_pool::set_thread_shard(kSecond);
    const int64_t before = version_pool::shared_counters_in(kSecond);
    for (int64_t i = 0; i < 2 * batch - kWaiting + 1; ++i)
      version_pool::give_back(c10::VariableVersion(0));
    EXPECT_EQ(version_pool::shared_counters_in(kSecond), before + batch);
  }).join();
}

TEST(VersionPool, OffCountersAreNewAndFreed) {
  const PoolOnAtEnd restore;
  version_pool::set_enabled(false);
  EXPECT_FALSE(version_pool::enabled());
  const int64_t before = version_pool::shared_counters();
  c10::VariableVersion counter(0);
  version_pool::give_back(std::move(counter));
  EXPECT_TRUE(counter.enabled());  // left to its tensor, freed with it
  EXPECT_EQ(version_pool::take().current_version(), 0U);
  EXPECT_EQ(version_pool::shared_counters(), before);
  version_pool::set_enabled(true);
  EXPECT_TRUE(version_pool::enabled());
}

}  // namespace
