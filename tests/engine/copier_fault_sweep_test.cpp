// Each CUDA call of a copy failing in turn (injected, cuda_fault.h), on every route, and each of
// its first polls: get() must say which call failed, everything the copy held (pinned staging,
// device memory) must be released, and the next copy must work. Skipped without a CUDA device.
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

#include "detail/cuda_fault.h"
#include "detail/pinned_upload.h"
#include "fault_test_support.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "watchdog.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::detail::CudaFaultInjection;
using mtc::test::CopierFaultGpuTest;
using mtc::test::expect_structure_copy;
using mtc::test::HeldMemory;
using mtc::test::reference_batch;
using mtc::test::Route;
using mtc::test::routes;
using mtc::test::Watchdog;

// What one sweep of injected faults found: failures that came out of get() and failures the
// engine absorbed with a correct result.
struct SweepTally {
  int64_t surfaced = 0;
  int64_t absorbed = 0;
};

// Fails the 1st, 2nd, ... checked call that `arm` counts, one copy each, until a copy makes fewer
// such calls or `max_faults` is reached (returned as the count reached): each failure must
// come out of get() naming the call, with nothing left held.
int64_t sweep_faults(void (*arm)(int64_t, cudaError_t), int64_t max_faults,
                     const c10::IValue& input, const c10::Device& target,
                     const CopyOptions& options, SweepTally& tally) {
  const HeldMemory before;  // the caller synchronized the device first
  int64_t nth = 1;
  for (; nth <= max_faults; ++nth) {
    arm(nth, cudaErrorInvalidValue);
    bool threw = false;
    {
      CopyHandle h = start_copy(input, target, options);
      try {
        const c10::IValue out = h.get();
        if (!CudaFaultInjection::disarm()) break;  // the copy made fewer calls: all covered
        expect_structure_copy(out, input, target);
        ++tally.absorbed;
      } catch (const c10::Error& e) {
        threw = true;
        const std::string message = e.what_without_backtrace();
        EXPECT_TRUE(CudaFaultInjection::disarm()) << "failed without the fault: " << message;
        EXPECT_NE(message.find("cudaErrorInvalidValue"), std::string::npos) << message;
        EXPECT_NE(message.find("mtc: cuda"), std::string::npos)
            << "the error does not name the CUDA call: " << message;
        ++tally.surfaced;
      }
    }
    if (threw) before.expect_unchanged("a copy whose CUDA call " + std::to_string(nth) + " failed");
    if (::testing::Test::HasFailure()) break;
  }
  CudaFaultInjection::disarm();
  return nth;
}

// Every route with the mixed batch, which takes every path (packed, one by one, the pipelined
// large tensors, views), and the reference batch, which is walked in parts; on a worker and on
// the caller. After each sweep the same copy must work.
template <typename Sweep>
void for_each_copy(Sweep&& sweep) {
  for (const Route& route : routes()) {
    for (const bool mixed : {true, false}) {
      const c10::IValue input =
          mixed ? mtc::test::mixed_batch(route.source) : reference_batch(route.source);
      for (const bool background : {true, false}) {
        const std::string what = route.name + (mixed ? ", mixed batch" : ", reference batch") +
                                 (background ? ", background thread" : ", on the caller");
        SCOPED_TRACE(what);
        CopyOptions options;
        options.use_background_thread = background;
        options.pinned_host_outputs = route.pinned_host_outputs;
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        sweep(what, input, route.target, options);
        if (::testing::Test::HasFailure()) return;
        CopyHandle after = start_copy(input, route.target, options);
        expect_structure_copy(after.get(), input, route.target);
      }
    }
  }
}

// Every CUDA call a copy makes but its polls fails in turn (the 1st in one copy, the 2nd in the
// next, ... until a copy makes fewer calls than the count): a copy makes as many such calls in
// every run. A failure the engine absorbs (the pinned pool falls back when merging its slabs
// fails) must give a correct result.
TEST_F(CopierFaultGpuTest, FaultInjectedCudaErrorAtEachCallSurfacesFromGet) {
  constexpr int64_t kMaxCalls = 2000;
  Watchdog watchdog(std::chrono::seconds(600), "the injected-fault sweep");
  for_each_copy([&](const std::string& what, const c10::IValue& input, const c10::Device& target,
                    const CopyOptions& options) {
    SweepTally tally;
    const int64_t reached =
        sweep_faults(&CudaFaultInjection::arm, kMaxCalls, input, target, options, tally);
    EXPECT_LT(reached, kMaxCalls) << "a copy kept making CUDA calls";
    EXPECT_GT(tally.surfaced, 0) << "no injected failure reached get()";
    std::cout << "[          ] " << what << ": " << reached - 1 << " CUDA calls failed in turn, "
              << tally.surfaced << " failures from get(), " << tally.absorbed << " absorbed\n";
  });
}

// The polls (event queries repeated while the device works) fail in turn, the first kMaxPolls of
// each copy: how many a copy makes depends on how fast its DMAs drain, so only the first ones
// are made in every run. Each failure comes out of get(). The pinned upload of the mixed batch's
// large pageable tensors polls when one thread queues its DMAs, which the default gives only
// where the upload's crew joins (pinned_upload.h): one queuer is asked for, so that some copy
// polls on any host.
TEST_F(CopierFaultGpuTest, FaultInjectedCudaErrorAtEachPollSurfacesFromGet) {
  constexpr int64_t kMaxPolls = 12;
  Watchdog watchdog(std::chrono::seconds(600), "the injected-poll sweep");
  struct OneQueuer {
    OneQueuer() { mtc::detail::set_upload_queuing(mtc::detail::UploadQueuing::kOneQueuer); }
    ~OneQueuer() { mtc::detail::set_upload_queuing(mtc::detail::UploadQueuing::kAuto); }
  } one_queuer;
  int64_t surfaced = 0;
  for_each_copy([&](const std::string& what, const c10::IValue& input, const c10::Device& target,
                    const CopyOptions& options) {
    SweepTally tally;
    const int64_t reached =
        sweep_faults(&CudaFaultInjection::arm_poll, kMaxPolls, input, target, options, tally);
    EXPECT_EQ(tally.absorbed, 0) << "a failed poll gave a result";
    surfaced += tally.surfaced;
    std::cout << "[          ] " << what << ": " << reached - 1 << " polls failed in turn\n";
  });
  EXPECT_GT(surfaced, 0) << "no copy polled: the sweep tested nothing";
}

}  // namespace
