// The driver warm-up a worker makes ahead of a forecast copy (driver_warmup.h): it makes its
// calls when on and none when off, fails nothing, takes no fault meant for a copy's checked
// call, and copies after it are exact. That it shortens a step is measured, not tested
// (BM_EngineCopy bit 4194304). Skipped without a CUDA device.
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "detail/cuda_fault.h"
#include "detail/driver_warmup.h"
#include "detail/worker_pool_set.h"
#include "gpu_test_support.h"

namespace {

namespace warmup = mtc::detail::driver_warmup;
using mtc::detail::CudaFaultInjection;
using mtc::detail::WorkerPoolSet;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::reference_batch;

// The pools' workers never wake ahead of a copy meanwhile: one woken by an earlier test's
// regular copies would warm the driver between a test's counts.
class DriverWarmupGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    WorkerPoolSet::instance().set_anticipate(false);
  }
  void TearDown() override {
    warmup::set_enabled(was_on_);
    WorkerPoolSet::instance().set_anticipate(anticipated_);
    GpuTest::TearDown();
  }
  bool was_on_ = warmup::enabled();
  bool anticipated_ = WorkerPoolSet::instance().anticipate();
};

// Allocations device 0's caching allocator has made, cumulative: the warm-up makes one.
int64_t allocations_on_device_0() {
  const auto total = static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE);
  return c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocation[total].allocated;
}

TEST_F(DriverWarmupGpu, MakesItsCallsWhenOnAndNoneWhenOff) {
  warmup::set_enabled(true);
  warmup::warm(0);  // the first makes the stream, event and buffers
  int64_t before = allocations_on_device_0();
  warmup::warm(0);
  EXPECT_EQ(allocations_on_device_0(), before + 1);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  warmup::set_enabled(false);
  EXPECT_FALSE(warmup::enabled());
  before = allocations_on_device_0();
  warmup::warm(0);
  EXPECT_EQ(allocations_on_device_0(), before);
}

TEST_F(DriverWarmupGpu, TakesNoFaultMeantForACopysCall) {
  warmup::set_enabled(true);
  CudaFaultInjection::arm(1, cudaErrorMemoryAllocation);
  warmup::warm(0);
  EXPECT_FALSE(CudaFaultInjection::disarm()) << "the warm-up took the fault";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(DriverWarmupGpu, ADeviceThatDoesNotExistIsSkipped) {
  warmup::set_enabled(true);
  warmup::warm(static_cast<c10::DeviceIndex>(c10::cuda::device_count()));
  warmup::warm(-1);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(DriverWarmupGpu, CopiesAfterWarmUpsAreExact) {
  warmup::set_enabled(true);
  const c10::IValue batch = reference_batch();
  for (int i = 0; i < 3; ++i) {
    warmup::warm(0);
    const c10::IValue on_gpu = mtc::start_copy(batch, kCuda0).get();
    expect_structure_copy(on_gpu, batch, kCuda0);
    warmup::warm(0);
    expect_structure_copy(mtc::start_copy(on_gpu, kCpu).get(), on_gpu, kCpu);
  }
}

}  // namespace
