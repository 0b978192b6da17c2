// What a copy's completion, its GPU->CPU pipeline and the event pool keep or lose when memory runs
// out: an event taken from its pool goes back to it, the pool takes events back without
// allocating, and a pipeline left undrained (its copy failed) goes without allocating, since it
// does so in a destructor, where a throw would end the process. Skipped without a CUDA device,
// and under a sanitizer, whose runtime owns operator new (failing_new.h).
#include <ATen/ops/full.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "detail/completion.h"
#include "detail/event_pool.h"
#include "detail/staging.h"
#include "failing_new.h"
#include "gpu_test_support.h"

namespace {

using mtc::detail::Completion;
using mtc::detail::EventPool;
using mtc::detail::PinnedPipeline;
using mtc::test::GpuTest;
using mtc::test::kCuda0;
using mtc::test::NextAllocationFails;

class CompletionGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (!NextAllocationFails::available()) GTEST_SKIP() << NextAllocationFails::kUnavailable;
  }
};

TEST_F(CompletionGpu, AnEventItHasNoRoomToHoldGoesBackToItsPool) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(0).stream();
  // The pool hands out the event released last first: `spare` is the one a record takes.
  const cudaEvent_t spare = EventPool::instance().acquire(0);
  EventPool::instance().release(0, spare);
  {
    Completion completion;
    bool threw = false;
    {
      const NextAllocationFails failure;  // the completion's first event needs room
      try {
        completion.record(0, stream);
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      EXPECT_TRUE(failure.fired());
    }
    EXPECT_TRUE(threw);
  }
  const cudaEvent_t next = EventPool::instance().acquire(0);
  EXPECT_EQ(next, spare) << "the event the failed record took was not given back";
  EventPool::instance().release(0, next);
}

TEST_F(CompletionGpu, EventsGoBackToTheirPoolWithoutAllocating) {
  // More events out at once than the pool's free list held: each comes back to room made for it
  // when it was made.
  std::vector<cudaEvent_t> events;
  for (int i = 0; i < 64; ++i) events.push_back(EventPool::instance().acquire(0));
  const size_t waiting = EventPool::instance().waiting(0);
  {
    const NextAllocationFails failure;
    for (const cudaEvent_t e : events) EventPool::instance().release(0, e);
    EXPECT_FALSE(failure.fired()) << "a release allocated";
  }
  EXPECT_EQ(EventPool::instance().waiting(0), waiting + events.size()) << "events were lost";
  EXPECT_GE(EventPool::instance().made(0), events.size());
}

TEST_F(CompletionGpu, AnUndrainedPipelineGoesWithoutAllocating) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(0).stream();
  const at::Tensor source = at::full({1024}, 7, at::TensorOptions().dtype(at::kInt).device(kCuda0));
  std::vector<int> host(1024, 0);
  Completion completion;
  {
    auto pipeline = std::make_unique<PinnedPipeline>(completion, 0, stream);
    pipeline->device_to_host(reinterpret_cast<std::byte*>(host.data()),
                             static_cast<const std::byte*>(source.const_data_ptr()),
                             static_cast<int64_t>(source.nbytes()));
    // A copy that failed here leaves the pipeline to its destructor. Recording the pending host
    // copy there would need room: a throw out of the destructor would end this process.
    const NextAllocationFails failure;
    pipeline.reset();
    EXPECT_FALSE(failure.fired()) << "the destructor allocated";
  }
  // As the failure path does: the streams first, then the completion, which gives the staging back.
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  completion.wait();
  EXPECT_EQ(host[0], 0) << "a failed copy's host copies ran after all";
}

}  // namespace
