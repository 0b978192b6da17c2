// A split CPU->GPU walk's threads staged side by side for one DMA (detail/split_staging.h), against
// each thread staging on its own: the same outputs either way, the outputs of one DMA on one
// storage that counts exactly one reference per output, and a larger walk than the last staging
// what does not fit on its own.
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Storage.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "detail/copy_job.h"
#include "detail/worker_pool_set.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::CopyStats;
using mtc::start_copy;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCuda0;
using mtc::test::random_tensor;
using mtc::test::tensors_of;

// Sets detail::set_one_dma_per_split_walk for a test and puts the previous setting back.
class OneDmaPerSplitWalk {
 public:
  explicit OneDmaPerSplitWalk(bool on) : previous_(mtc::detail::set_one_dma_per_split_walk(on)) {}
  OneDmaPerSplitWalk(const OneDmaPerSplitWalk&) = delete;
  OneDmaPerSplitWalk& operator=(const OneDmaPerSplitWalk&) = delete;
  ~OneDmaPerSplitWalk() { mtc::detail::set_one_dma_per_split_walk(previous_); }

 private:
  bool previous_;
};

// 48 lists of 24 packed tensors of mixed element sizes, `length` elements and more each.
c10::IValue split_structure(int64_t length) {
  return mtc::test::list_of_lists(48, 24, [length](int k) {
    return random_tensor(k % 3 == 0   ? at::kDouble
                         : k % 3 == 1 ? at::kFloat
                                      : at::kByte,
                         {length + k % 5});
  });
}

bool parallel() { return mtc::detail::worker_pool_for(kCuda0).size() > 0; }

TEST_F(GpuTest, SplitWalkStagesForOneDmaOrOneEachWithTheSameOutputs) {
  const c10::IValue root = split_structure(6);
  const std::vector<at::Tensor> leaves = tensors_of(root);
  for (const bool one_dma : {true, false}) {
    const OneDmaPerSplitWalk setting(one_dma);
    // A chunk alignment above the allocator's own moves the views along with the memory.
    for (const int64_t alignment : {int64_t{16}, int64_t{4096}}) {
      int64_t most_threads = 0;
      int64_t least_chunks = INT64_MAX;
      int64_t most_chunks = 0;
      // The first split walk sizes the block of the next ones.
      for (int copy = 0; copy < 6; ++copy) {
        SCOPED_TRACE(::testing::Message()
                     << "one DMA " << one_dma << ", alignment " << alignment << ", copy " << copy);
        CopyOptions options;
        options.min_packed_alignment_bytes = alignment;
        CopyHandle h = start_copy(root, kCuda0, options);
        const c10::IValue out = h.get();
        expect_structure_copy(out, root, kCuda0);
        const std::vector<at::Tensor> outputs = tensors_of(out);
        ASSERT_EQ(outputs.size(), leaves.size());
        for (size_t i = 0; i < outputs.size(); ++i) {
          const auto a =
              static_cast<uintptr_t>(std::max<int64_t>(alignment, leaves[i].element_size()));
          EXPECT_EQ(reinterpret_cast<uintptr_t>(outputs[i].data_ptr()) % a, 0u) << "leaf " << i;
        }
        const CopyStats s = h.stats();
        EXPECT_EQ(s.packed, s.tensors);
        EXPECT_GE(s.chunks, 1);
        EXPECT_LE(s.chunks, s.walk_threads);
        if (s.walk_threads >= 2) {
          most_threads = std::max(most_threads, s.walk_threads);
          least_chunks = std::min(least_chunks, s.chunks);
          most_chunks = std::max(most_chunks, s.chunks);
        }
        if (one_dma && s.chunks == 1) {
          // One storage carries every output, with one reference each: those counted ahead and
          // not taken were let go, and the walk keeps none.
          const c10::StorageImpl* shared = outputs.front().storage().unsafeGetStorageImpl();
          for (const at::Tensor& output : outputs)
            EXPECT_EQ(output.storage().unsafeGetStorageImpl(), shared);
          EXPECT_EQ(outputs.front().storage().use_count(), static_cast<size_t>(s.packed));
        }
      }
      if (parallel() && most_threads >= 2) {
        // Split walks after the first find room for every thread's chunks side by side (a
        // thread that runs out of elements before the block is made stages on its own: not
        // every copy), or each thread queues its own.
        if (one_dma) {
          EXPECT_EQ(least_chunks, 1);
        } else {
          EXPECT_GE(most_chunks, 2);
        }
      }
    }
  }
}

// A split walk larger than the one before: the threads whose chunks do not fit in the block
// sized after that walk stage them on their own, for DMAs of their own, and every output still
// holds its input's values, on storages that count their references right. The next copies of the
// larger structure find room for all of them.
TEST_F(GpuTest, SplitWalkLargerThanTheLastStagesWhatDoesNotFitOnItsOwn) {
  const OneDmaPerSplitWalk setting(true);
  const c10::IValue small = split_structure(4);
  const c10::IValue large = split_structure(400);
  int64_t least_large_chunks = INT64_MAX;
  const std::vector<const c10::IValue*> roots = {&small, &small, &large, &large, &large, &large};
  for (size_t i = 0; i < roots.size(); ++i) {
    const bool is_small = roots[i] == &small;
    SCOPED_TRACE(::testing::Message() << (is_small ? "small" : "large") << ", copy " << i);
    CopyHandle h = start_copy(*roots[i], kCuda0, CopyOptions{});
    const c10::IValue out = h.get();
    expect_structure_copy(out, *roots[i], kCuda0);
    const CopyStats s = h.stats();
    EXPECT_EQ(s.packed, s.tensors);
    EXPECT_GE(s.chunks, 1);
    EXPECT_LE(s.chunks, s.walk_threads);
    // Each storage counts one reference per output on it.
    std::map<const c10::StorageImpl*, size_t> outputs_on;
    const std::vector<at::Tensor> outputs = tensors_of(out);
    for (const at::Tensor& output : outputs) ++outputs_on[output.storage().unsafeGetStorageImpl()];
    for (const at::Tensor& output : outputs)
      ASSERT_EQ(output.storage().use_count(), outputs_on[output.storage().unsafeGetStorageImpl()]);
    // The first large copy is sized after the small ones; those after it after a large one.
    if (!is_small && i > 2) least_large_chunks = std::min(least_large_chunks, s.chunks);
  }
  if (parallel()) {
    EXPECT_EQ(least_large_chunks, 1);
  }
}

}  // namespace
