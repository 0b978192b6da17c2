// CUDA failures that the engine handles leave no error pending for the thread (cuda_check.h):
// a real cudaHostAlloc that fails, thrown or swallowed by the pinned pool, must not make the next
// kernel launch's check fail, and neither must an event that is not ready yet. The fault tests
// cannot show this: an injected fault makes no call. Skipped without a CUDA device.
#include <ATen/cuda/Sleep.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "detail/completion.h"
#include "detail/gather.h"
#include "detail/pinned_pool.h"
#include "gpu_test_support.h"

namespace {

using mtc::detail::Completion;
using mtc::detail::GatherItem;
using mtc::detail::PinnedBlock;
using mtc::detail::PinnedPool;
using mtc::detail::SlabSource;
using mtc::test::bytes_of;
using mtc::test::GpuTest;
using mtc::test::kCuda0;
using mtc::test::kSleepCycles;
using mtc::test::random_tensor;

class CudaCheckGpu : public GpuTest {};

// No host can pin a pebibyte: cudaHostAlloc refuses it.
constexpr int64_t kImpossibleBytes = int64_t{1} << 50;

// The engine's gather kernel on the current stream, then the checks a caller would make: the
// launch's own (launch_gather throws if cudaGetLastError() reports anything) and ours.
void expect_a_launch_that_works_to_pass_its_check() {
  const at::Tensor src = random_tensor(at::kByte, {1000}, kCuda0);
  const at::Tensor dst = at::empty({1000}, src.options());
  const GatherItem item{src.data_ptr(), 0, 1000};
  EXPECT_NO_THROW(mtc::detail::launch_gather(&item, 1, static_cast<std::byte*>(dst.data_ptr()),
                                             c10::cuda::getCurrentCUDAStream().stream()));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_TRUE(bytes_of(dst) == bytes_of(src)) << "the gather copied other bytes";
}

TEST_F(CudaCheckGpu, APinnedAllocationThatFailedIsNotBlamedOnTheNextLaunch) {
  PinnedPool pool;  // the engine's slab source: cudaHostAlloc
  try {
    (void)pool.acquire(kImpossibleBytes);
    ADD_FAILURE() << "cudaHostAlloc pinned " << kImpossibleBytes << " bytes";
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find("cudaHostAlloc"), std::string::npos) << message;
  }
  EXPECT_EQ(pool.stats().reserved_bytes, 0);
  expect_a_launch_that_works_to_pass_its_check();
}

// The engine's slab source, except that the third slab (the merge's) is one no host can pin.
int slabs_asked = 0;
void* allocate_third_impossibly(int64_t bytes) {
  return mtc::detail::cuda_host_slabs().allocate(++slabs_asked == 3 ? kImpossibleBytes : bytes);
}

// An idle pool of two slabs merges them into one at the next request; when that allocation
// fails, the pool carries on and the request succeeds: the failure is handled where no caller
// sees it, so nothing but the check itself can clear what it left pending.
TEST_F(CudaCheckGpu, AMergeThatCouldNotAllocateIsNotBlamedOnTheNextLaunch) {
  slabs_asked = 0;
  PinnedPool pool(SlabSource{&allocate_third_impossibly, mtc::detail::cuda_host_slabs().free});
  const PinnedBlock first = pool.acquire(4096);
  const PinnedBlock second = pool.acquire(PinnedPool::kSlabRounding * 4);  // fits no first slab
  ASSERT_EQ(pool.stats().slabs, 2);
  pool.release(first);
  pool.release(second);
  const PinnedBlock after_merge = pool.acquire(4096);
  EXPECT_TRUE(after_merge);
  EXPECT_EQ(slabs_asked, 4) << "the merge did not ask for its slab, or the request for one";
  pool.release(after_merge);
  expect_a_launch_that_works_to_pass_its_check();
}

// cudaEventQuery's "not ready" is no failure, but the runtime may leave it pending as one.
TEST_F(CudaCheckGpu, AQueryOfWorkStillRunningLeavesNoError) {
  at::cuda::sleep(kSleepCycles);
  Completion completion;
  completion.record(0, c10::cuda::getCurrentCUDAStream().stream());
  const bool ready = completion.query();
  if (!mtc::test::host_timing_distorted()) {
    EXPECT_FALSE(ready) << "the sleep kernel had ended";
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  completion.wait();
}

}  // namespace
