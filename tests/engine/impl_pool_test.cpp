// The pool of the engine's output TensorImpls (impl_pool): blocks freed on one thread reach the
// threads that make outputs in whole batches, in the shard of the worker pool that made them.
// Runs without a GPU.
#include "detail/impl_pool.h"

#include <ATen/ops/ones.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "detail/outputs.h"
#include "detail/version_pool.h"
#include "detail/worker_pool_set.h"
#include "mtc/copier.h"

namespace {

// `count` output views of `storage`, shaped as `like`, made on a thread of their own (as a
// pool worker makes a copy's outputs: in the TensorImpl pool's shard of this thread, as the
// workers of this thread's copies) and handed back to this one.
std::vector<at::Tensor> views_made_on_another_thread(const c10::Storage& storage,
                                                     const at::Tensor& like, int count) {
  std::vector<at::Tensor> out;
  const size_t shard = mtc::detail::impl_pool::thread_shard();
  std::thread([&] {
    mtc::detail::impl_pool::set_thread_shard(shard);
    for (int i = 0; i < count; ++i) out.push_back(mtc::detail::make_view(storage, 0, like));
  }).join();
  return out;
}

// Outputs are usually made on a worker and freed on the caller's thread. The TensorImpls freed
// on one thread go, in whole batches, to a shared list from which another thread that makes
// outputs takes them back, and a thread that exits hands over the blocks it kept.
TEST(ImplPool, TensorImplsFreedOnAnotherThreadAreReusedInBatches) {
  using namespace mtc::detail;
  const at::Tensor like = at::ones({2});
  const c10::Storage storage = like.storage();
  constexpr int kCount = 1000;
  std::vector<at::Tensor> made = views_made_on_another_thread(storage, like, kCount);
  std::set<const void*> impls;
  for (const at::Tensor& t : made) impls.insert(t.unsafeGetTensorImpl());
  const int64_t before = impl_pool::shared_blocks();
  made.clear();  // this thread keeps fewer than two batches and hands the rest on
  const int64_t handed = impl_pool::shared_blocks() - before;
  EXPECT_GE(handed, kCount - 2 * static_cast<int64_t>(impl_pool::kBatch));
  EXPECT_EQ(handed % static_cast<int64_t>(impl_pool::kBatch), 0);

  // Takes batches back; at exit, the thread hands over the rest.
  const std::vector<at::Tensor> again = views_made_on_another_thread(storage, like, kCount);
  int reused = 0;
  for (const at::Tensor& t : again) reused += impls.count(t.unsafeGetTensorImpl()) ? 1 : 0;
  // The first blocks handed on may be ones this thread kept from earlier tests.
  EXPECT_GE(reused, handed - 2 * static_cast<int64_t>(impl_pool::kBatch));
  EXPECT_GT(reused, kCount / 2);
  EXPECT_LE(impl_pool::shared_blocks(), before + static_cast<int64_t>(impl_pool::kBatch));
  for (const at::Tensor& t : again) {
    EXPECT_EQ(t.sizes(), like.sizes());
    EXPECT_TRUE(t.storage().is_alias_of(storage));
  }
}

// Puts back the TensorImpl pool's shard switch and this thread's shard, however a test ends.
struct ShardState {
  ShardState(const ShardState&) = delete;  // restores once
  ShardState& operator=(const ShardState&) = delete;
  ShardState() = default;
  ~ShardState() {
    mtc::detail::impl_pool::set_sharded(sharded);
    mtc::detail::impl_pool::set_thread_shard(shard);
  }
  bool sharded = mtc::detail::impl_pool::sharded();
  size_t shard = mtc::detail::impl_pool::thread_shard();
};

// With the shards on (the default), each worker pool has its own shard of the pool: blocks a
// thread frees go to the shard they were made in, and only threads of that shard take them back
// (a GPU's workers get the blocks its caller freed, not another GPU's). The outputs' version
// counters go with their blocks (version_pool_test.cpp).
TEST(ImplPool, FreedTensorImplsAndCountersComeBackOnlyToThreadsOfTheirShard) {
  using namespace mtc::detail;
  const ShardState restore;
  ASSERT_TRUE(impl_pool::sharded()) << "the shards are on by default";
  const at::Tensor like = at::ones({2});
  const c10::Storage storage = like.storage();
  constexpr size_t kMine = 7;
  constexpr size_t kOther = 11;
  constexpr int kCount = 1000;
  const auto batch = static_cast<int64_t>(impl_pool::kBatch);
  static_assert(impl_pool::kBatch == version_pool::kBatch);
  // Blocks and counters waiting in a shard, both counts.
  auto waiting_in = [](size_t shard) {
    return std::pair(impl_pool::shared_blocks_in(shard), version_pool::shared_counters_in(shard));
  };
  impl_pool::set_thread_shard(kMine);
  std::vector<at::Tensor> made = views_made_on_another_thread(storage, like, kCount);
  const auto mine = waiting_in(kMine);
  const auto other = waiting_in(kOther);
  made.clear();
  const auto handed = waiting_in(kMine);
  EXPECT_GE(handed.first - mine.first, kCount - 2 * batch);
  EXPECT_GE(handed.second - mine.second, kCount - 2 * batch);
  EXPECT_EQ(waiting_in(kOther), other);

  auto make_in_shard = [&](size_t shard) {
    std::vector<at::Tensor> out;
    std::thread([&] {
      impl_pool::set_thread_shard(shard);
      for (int i = 0; i < 3 * static_cast<int>(impl_pool::kBatch); ++i)
        out.push_back(make_view(storage, 0, like));
    }).join();
    return out;
  };
  std::vector<at::Tensor> elsewhere = make_in_shard(kOther);
  EXPECT_EQ(waiting_in(kMine), handed) << "another shard's thread took them";
  std::vector<at::Tensor> here = make_in_shard(kMine);
  EXPECT_EQ(waiting_in(kMine), std::pair(handed.first - 3 * batch, handed.second - 3 * batch));

  // Blocks freed by a thread of another shard go home in whole batches: `elsewhere`'s were made
  // in kOther and are freed here, in kMine (fewer than a batch of kOther's could wait here).
  const int64_t other_blocks = impl_pool::shared_blocks_in(kOther);
  const int64_t mine_blocks = impl_pool::shared_blocks_in(kMine);
  elsewhere.clear();
  EXPECT_EQ(impl_pool::shared_blocks_in(kOther), other_blocks + 3 * batch);
  EXPECT_EQ(impl_pool::shared_blocks_in(kMine), mine_blocks);

  // With the shards off, every thread uses shard 0.
  impl_pool::set_sharded(false);
  EXPECT_FALSE(impl_pool::sharded());
  const auto first = waiting_in(0);
  const auto now_mine = waiting_in(kMine);
  here.clear();
  EXPECT_GT(waiting_in(0).first, first.first);
  EXPECT_GT(waiting_in(0).second, first.second);
  EXPECT_EQ(waiting_in(kMine), now_mine);
}

// A thread that starts a copy takes its pool's shard, and keeps it: the result it frees later
// goes back to the workers that made it.
TEST(ImplPool, StartingACopyGivesTheCallerItsPoolsShard) {
  using namespace mtc::detail;
  const ShardState restore;
  const c10::Device cpu(c10::kCPU);
  const size_t pools = impl_pool::shard_of_pool(worker_pool_for(cpu).id());
  impl_pool::set_thread_shard(0);  // no pool's
  mtc::CopyHandle handle = mtc::start_copy(c10::IValue(at::ones({2})), cpu);
  EXPECT_EQ(impl_pool::thread_shard(), pools);
  handle.get();
  EXPECT_EQ(impl_pool::thread_shard(), pools);
}

// With the pool off (a measurement's switch), blocks go back to operator delete and none reach the
// shared list; blocks made while it was on and freed while it is off are not lost either way.
TEST(ImplPool, TensorImplPoolCanBeTurnedOffAndOnAgain) {
  using namespace mtc::detail;
  const at::Tensor like = at::ones({2});
  const c10::Storage storage = like.storage();
  constexpr int kCount = 1000;
  std::vector<at::Tensor> made_on = views_made_on_another_thread(storage, like, kCount);
  impl_pool::set_enabled(false);
  EXPECT_FALSE(impl_pool::enabled());
  const int64_t before = impl_pool::shared_blocks();
  made_on.clear();
  views_made_on_another_thread(storage, like, kCount);  // and freed here at once
  EXPECT_EQ(impl_pool::shared_blocks(), before);
  impl_pool::set_enabled(true);
  EXPECT_TRUE(impl_pool::enabled());
  std::vector<at::Tensor> made_again = views_made_on_another_thread(storage, like, kCount);
  const int64_t made = impl_pool::shared_blocks();
  made_again.clear();  // on again: this thread hands most of them on
  EXPECT_GE(impl_pool::shared_blocks() - made,
            kCount - 2 * static_cast<int64_t>(impl_pool::kBatch));
}

// A thread whose shard changes (a caller that copies to several GPUs in turn) sends the blocks
// and counters it kept for its own use back to the shard they came from, rather than handing them
// out, or over, as the new shard's.
TEST(ImplPool, AThreadThatChangesShardSendsItsKeptBlocksHome) {
  using namespace mtc::detail;
  ASSERT_TRUE(impl_pool::sharded()) << "the shards are on by default";
  constexpr size_t kFirst = 3;
  constexpr size_t kSecond = 13;
  const auto batch = static_cast<int64_t>(impl_pool::kBatch);
  const at::Tensor like = at::ones({2});
  const c10::Storage storage = like.storage();
  std::pair<int64_t, int64_t> counters;  // waiting in kFirst and kSecond before the thread ends
  std::thread([&] {
    // A new thread: nothing kept yet. The views are made in kFirst and freed here, in kFirst,
    // so this thread keeps them all (up to two batches).
    impl_pool::set_thread_shard(kFirst);
    std::vector<at::Tensor> made = views_made_on_another_thread(storage, like, 2 * batch);
    const int64_t first = impl_pool::shared_blocks_in(kFirst);
    const int64_t second = impl_pool::shared_blocks_in(kSecond);
    made.clear();
    EXPECT_EQ(impl_pool::shared_blocks_in(kFirst), first) << "kept by the thread";
    impl_pool::set_thread_shard(kSecond);
    EXPECT_EQ(impl_pool::shared_blocks_in(kFirst), first + 2 * batch);
    EXPECT_EQ(impl_pool::shared_blocks_in(kSecond), second);
    counters = {version_pool::shared_counters_in(kFirst),
                version_pool::shared_counters_in(kSecond)};
  }).join();
  // The counters kept with the blocks went home too, at the latest when the thread ended.
  EXPECT_EQ(version_pool::shared_counters_in(kFirst), counters.first + 2 * batch);
  EXPECT_EQ(version_pool::shared_counters_in(kSecond), counters.second);
}

// Blocks of a shard that a thread freed while it was in another wait for a whole batch; if the
// thread comes back to their shard first, they are its own again, not held until it leaves.
TEST(ImplPool, AThreadThatComesBackToAShardGetsItsWaitingBlocks) {
  using namespace mtc::detail;
  ASSERT_TRUE(impl_pool::sharded()) << "the shards are on by default";
  constexpr size_t kFirst = 4;
  constexpr size_t kSecond = 14;
  constexpr int kFew = 10;
  const at::Tensor like = at::ones({2});
  const c10::Storage storage = like.storage();
  std::thread([&] {
    impl_pool::set_thread_shard(kFirst);
    std::vector<at::Tensor> made = views_made_on_another_thread(storage, like, kFew);
    std::set<const void*> freed;
    for (const at::Tensor& t : made) freed.insert(t.unsafeGetTensorImpl());
    made.clear();                          // kept by this thread, in kFirst
    impl_pool::set_thread_shard(kSecond);  // staged for kFirst: fewer than a batch
    impl_pool::set_thread_shard(kFirst);   // and this thread's own again
    for (int i = 0; i < kFew; ++i) made.push_back(make_view(storage, 0, like));
    for (const at::Tensor& t : made)
      EXPECT_EQ(freed.count(t.unsafeGetTensorImpl()), 1U) << "a new block, not a waiting one";
  }).join();
}

}  // namespace
