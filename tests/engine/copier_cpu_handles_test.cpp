// The copier's handles, and the threads a copy runs on: the caller's, the workers', or several
// of them for a walk in parts. Runs without a GPU.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "cpu_test_support.h"
#include "detail/copy_job.h"
#include "detail/worker_pool_set.h"
#include "mtc/copier.h"
#include "pool_blocker.h"
#include "structure_compare.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::expect_same_structure_same_tensors;
using mtc::test::kCpu;
using mtc::test::mixed_batch;

// ---------------------------------------------------------------------------------------------
// Handles

TEST(CopierCpu, GetTwiceReturnsTheSameResult) {
  std::vector<at::Tensor> tensors;
  const c10::IValue in = mixed_batch(tensors);
  CopyHandle h = start_copy(in, kCpu);
  const c10::IValue a = h.get();
  const c10::IValue b = h.get();
  EXPECT_TRUE(a.is(b));
  EXPECT_TRUE(h.ready());
}

TEST(CopierCpu, EmptyHandle) {
  CopyHandle h;
  EXPECT_FALSE(h.valid());
  EXPECT_THROW(h.get(), c10::Error);
  EXPECT_THROW((void)h.ready(), c10::Error);
  EXPECT_THROW((void)h.stats(), c10::Error);
}

TEST(CopierCpu, MovedHandles) {
  const at::Tensor t = at::ones({4});
  CopyHandle a = start_copy(t, kCpu);
  CopyHandle b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  ASSERT_TRUE(b.valid());
  EXPECT_TRUE(b.get().toTensor().is_same(t));

  const at::Tensor u = at::zeros({4});
  CopyHandle c = start_copy(u, kCpu);
  b = std::move(c);         // drops (waits for) b's copy, takes c's
  EXPECT_FALSE(c.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b.get().toTensor().is_same(u));
  CopyHandle d;
  d = std::move(b);
  EXPECT_TRUE(d.get().toTensor().is_same(u));
}

// ---------------------------------------------------------------------------------------------
// Threads

// With every worker busy and other work queued ahead of the copy, get() neither waits for a
// worker nor runs the queued work first: the caller runs the copy itself. (Otherwise get() would
// not return before the blocking tasks are released below.)
TEST(CopierCpu, GetRunsTheCopyWhenNoWorkerHasStartedIt) {
  // The pool start_copy gives a copy to the CPU made on this thread, every worker busy and one
  // more task queued ahead of the copy.
  mtc::test::PoolBlocker blocker(mtc::detail::worker_pool_for(kCpu), /*queued_behind=*/1);
  std::vector<at::Tensor> tensors;
  const c10::IValue in = mixed_batch(tensors);
  std::atomic<bool> done{false};
  std::thread caller([&] {
    CopyHandle h = start_copy(in, kCpu);
    expect_same_structure_same_tensors(h.get(), in);
    done.store(true);
  });
  for (int i = 0; i < 2000 && !done.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(done.load()) << "get() waited for a worker";
  blocker.release();  // the task queued ahead of the copy runs now, after it
  caller.join();
}

TEST(CopierCpu, TheCopyIsDestroyedOnTheThreadThatDropsTheHandle) {
  // The copy holds the caller's tensors. In Python, dropping one takes the GIL, which a worker
  // cannot do while the interpreter shuts down: the last reference must go on the caller's
  // thread, whether the caller ran the copy itself (get() before a worker woke up; the worker's
  // task is stale then) or a worker did (the caller slept first). The tensor's storage records
  // the thread that frees it; the copy holds its only reference once the test has let go.
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> freed_elsewhere{0};
  std::atomic<int> freed{0};
  for (int i = 0; i < 400; ++i) {
    auto* data = new float[4]();
    at::Tensor leaf = at::from_blob(
        data, {4},
        [&, caller](void* p) {
          if (std::this_thread::get_id() != caller) freed_elsewhere.fetch_add(1);
          freed.fetch_add(1);
          delete[] static_cast<float*>(p);
        },
        at::TensorOptions().dtype(at::kFloat));
    c10::List<at::Tensor> list;
    list.push_back(std::move(leaf));
    CopyHandle h = start_copy(c10::IValue(std::move(list)), kCpu);
    if (i % 2 == 1) std::this_thread::sleep_for(std::chrono::microseconds(200));
    (void)h.get();  // with a CPU target the result is the input itself: dropped here
  }
  // Stale tasks of copies the caller ran may still be queued: let the workers pop them.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(freed.load(), 400);
  EXPECT_EQ(freed_elsewhere.load(), 0);
}

TEST(CopierCpu, ManyConcurrentCallers) {
  std::vector<at::Tensor> tensors;
  const c10::IValue in = mixed_batch(tensors);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&in, &failures] {
      for (int i = 0; i < 200; ++i) {
        const c10::IValue out = start_copy(in, kCpu).get();
        if (!out.isList() || out.toList().size() != in.toList().size() || out.is(in))
          failures.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// A large structure is walked by the copy's thread and whichever workers wake up in time, each
// taking root elements in turn. Back-to-back copies (helpers of one copy still arriving while the
// next runs) and copies after an idle gap (helpers asleep, arriving late or never) must all be
// complete, and some must have been walked by more than one thread.
TEST(CopierCpu, SplitWalkIsCompleteWhicheverHelpersJoin) {
  const c10::impl::GenericList root =
      mtc::test::list_of_lists(40, 20, [](int k) { return at::full({1}, static_cast<double>(k)); });
  const int pool = mtc::detail::worker_pool_for(kCpu).size();
  int64_t most_threads = 0;
  // At least 200 copies; then more until one was split, for up to 20 s: on a loaded 2-core
  // machine the helpers often wake only after the copy's own thread has walked everything.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int round = 0;
       round < 200 || (most_threads < 2 && pool > 0 && std::chrono::steady_clock::now() < deadline);
       ++round) {
    if (round % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CopyOptions options;
    options.use_background_thread = round % 2 == 0;
    CopyHandle h = start_copy(root, kCpu, options);
    const c10::IValue out = h.get();
    expect_same_structure_same_tensors(out, root);
    const mtc::CopyStats s = h.stats();
    EXPECT_EQ(s.tensors, 800);
    EXPECT_GE(s.walk_threads, 1);
    EXPECT_LE(s.walk_threads, pool + 2);  // the copy's thread, the workers and a waiting caller
    most_threads = std::max(most_threads, s.walk_threads);
    // With workers in the pool, every copy takes the split path, whoever joins; to the CPU it
    // queues no CPU->GPU chunk.
    if (pool > 0) {
      EXPECT_GT(s.split_wait_us, 0);
      EXPECT_GT(s.split_leaf_ns, 0);  // its threads walked leaves
      EXPECT_GE(s.split_join_us, 0);
    } else {
      EXPECT_EQ(s.split_wait_us, 0);
      EXPECT_EQ(s.split_leaf_ns, 0);
      EXPECT_EQ(s.split_join_us, 0);
    }
    EXPECT_EQ(s.split_queue_us, 0);
    EXPECT_EQ(s.split_stage_us, 0);  // nothing staged between CPUs
    // Between CPUs nothing is staged, allocated for a device or queued there.
    EXPECT_EQ(s.allocate_us, 0);
    EXPECT_EQ(s.driver_us, 0);
    if (::testing::Test::HasFailure()) return;
  }
  if (pool > 0) {
    EXPECT_GE(most_threads, 2) << "no copy was walked by more than one thread";
  }
  // A structure too small to split has no split timings.
  const c10::impl::GenericList small =
      mtc::test::list_of_lists(3, 2, [](int k) { return at::full({1}, static_cast<double>(k)); });
  CopyHandle h = start_copy(small, kCpu, CopyOptions{});
  expect_same_structure_same_tensors(h.get(), small);
  EXPECT_EQ(h.stats().walk_threads, 1);
  EXPECT_EQ(h.stats().split_wait_us, 0);
  EXPECT_EQ(h.stats().split_queue_us, 0);
  EXPECT_EQ(h.stats().split_join_us, 0);
  EXPECT_EQ(h.stats().split_leaf_ns, 0);
  EXPECT_EQ(h.stats().split_stage_us, 0);
}

// A pool remembers what its last copy's walk was split into, by the root's length, and the next
// copy of a root as long queues that many helpers before it walks its first element. A small
// root as long as a large one before it is still copied whole, and is remembered as not split;
// the split settings changed, or the remembering off, nothing is remembered.
TEST(CopierCpu, TheNextRootAsLongIsSplitAsTheLastOneWas) {
  const mtc::detail::WorkerPool& pool = mtc::detail::worker_pool_for(kCpu);
  if (pool.size() < 1) GTEST_SKIP() << "the CPU copies' pool has no worker";
  const auto leaf = [](int k) { return at::full({1}, static_cast<double>(k)); };
  const c10::impl::GenericList large = mtc::test::list_of_lists(40, 20, leaf);  // 800 leaves
  const c10::impl::GenericList small = mtc::test::list_of_lists(40, 1, leaf);   // 40 leaves
  // As many as 800 leaves want (one a 128, less the walk's own thread), within the pool.
  const int64_t wanted =
      std::min<int64_t>(pool.size(), 800 / mtc::detail::kDefaultLeavesPerPart - 1);
  expect_same_structure_same_tensors(start_copy(large, kCpu).get(), large);
  EXPECT_EQ(mtc::detail::remembered_helpers(pool, 40), wanted);
  EXPECT_EQ(mtc::detail::remembered_helpers(pool, 41), 0) << "another root length";
  // Queued its helpers at once, and still whole.
  expect_same_structure_same_tensors(start_copy(small, kCpu).get(), small);
  EXPECT_EQ(mtc::detail::remembered_helpers(pool, 40), 0);
  // Now decided from its first element: too small to split.
  CopyHandle again = start_copy(small, kCpu);
  expect_same_structure_same_tensors(again.get(), small);
  EXPECT_EQ(again.stats().walk_threads, 1);
  expect_same_structure_same_tensors(start_copy(large, kCpu).get(), large);
  EXPECT_EQ(mtc::detail::remembered_helpers(pool, 40), wanted);
  mtc::detail::set_parallel_walk(mtc::detail::kDefaultParallelWalkLeaves);
  EXPECT_EQ(mtc::detail::remembered_helpers(pool, 40), wanted) << "set to what they were";
  mtc::detail::set_parallel_walk(mtc::detail::kDefaultParallelWalkLeaves, 64);
  mtc::detail::set_parallel_walk(mtc::detail::kDefaultParallelWalkLeaves);
  EXPECT_EQ(mtc::detail::remembered_helpers(pool, 40), 0) << "the settings changed since";
  expect_same_structure_same_tensors(start_copy(large, kCpu).get(), large);
  mtc::detail::set_early_split(false);
  EXPECT_EQ(mtc::detail::remembered_helpers(pool, 40), 0) << "turned off";
  mtc::detail::set_early_split(true);
  EXPECT_EQ(mtc::detail::remembered_helpers(pool, 40), wanted);
}

}  // namespace
