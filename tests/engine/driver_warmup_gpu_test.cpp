// The driver warm-up a worker makes ahead of a forecast copy (driver_warmup.h): it warms a
// device a copy prepared when on, nothing when off or for an index that is no device's, takes
// no fault meant for a copy's checked call, leaves no error, and copies after it are exact. That
// it shortens a step is measured, not tested (BM_EngineCopy bit 4194304). Skipped without a CUDA
// device.
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
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
    warmup::prepare(0);
    WorkerPoolSet::instance().set_anticipate(false);
  }
  void TearDown() override {
    warmup::set_enabled(was_on_);
    WorkerPoolSet::instance().set_anticipate(anticipated_);
    GpuTest::TearDown();
  }
  // instance() reads MTC_DRIVER_WARMUP before the setting is saved.
  bool anticipated_ = WorkerPoolSet::instance().anticipate();
  bool was_on_ = warmup::enabled();
};

TEST_F(DriverWarmupGpu, WarmsWhenOnAndNotWhenOff) {
  warmup::set_enabled(true);
  int64_t before = warmup::warmups_made();
  warmup::warm(0);
  EXPECT_EQ(warmup::warmups_made(), before + 1);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  warmup::set_enabled(false);
  EXPECT_FALSE(warmup::enabled());
  before = warmup::warmups_made();
  warmup::warm(0);
  EXPECT_EQ(warmup::warmups_made(), before);
}

TEST_F(DriverWarmupGpu, TakesNoFaultMeantForACopysCall) {
  warmup::set_enabled(true);
  CudaFaultInjection::arm(1, cudaErrorMemoryAllocation);
  const int64_t before = warmup::warmups_made();
  warmup::warm(0);
  EXPECT_EQ(warmup::warmups_made(), before + 1);
  EXPECT_FALSE(CudaFaultInjection::disarm()) << "the warm-up took the fault";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(DriverWarmupGpu, AnIndexThatIsNoDevicesIsSkipped) {
  warmup::set_enabled(true);
  const auto past_the_last = static_cast<c10::DeviceIndex>(c10::cuda::device_count());
  warmup::prepare(past_the_last);
  const int64_t before = warmup::warmups_made();
  warmup::warm(past_the_last);
  warmup::warm(-1);
  EXPECT_EQ(warmup::warmups_made(), before);
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

// The first copy to or from a device makes what its warm-ups use; a copy between CPUs makes
// nothing on a GPU.
TEST_F(DriverWarmupGpu, CopiesPrepareTheDevicesTheyUse) {
  warmup::set_enabled(true);
  EXPECT_FALSE(warmup::prepared(-1));
  warmup::forget(0);
  ASSERT_FALSE(warmup::prepared(0));
  const c10::IValue batch = reference_batch();
  (void)mtc::start_copy(batch, kCpu).get();
  EXPECT_FALSE(warmup::prepared(0)) << "a copy between CPUs prepared device 0";
  const c10::IValue on_gpu = mtc::start_copy(batch, kCuda0).get();
  EXPECT_TRUE(warmup::prepared(0)) << "a CPU->GPU copy did not prepare its target";
  warmup::forget(0);
  (void)mtc::start_copy(on_gpu, kCpu).get();
  EXPECT_TRUE(warmup::prepared(0)) << "a GPU->CPU copy did not prepare its source";
  // Turned off, a copy makes nothing; turned on again, the next one does.
  warmup::forget(0);
  warmup::set_enabled(false);
  (void)mtc::start_copy(batch, kCuda0).get();
  EXPECT_FALSE(warmup::prepared(0)) << "made while turned off";
  warmup::set_enabled(true);
  (void)mtc::start_copy(batch, kCuda0).get();
  EXPECT_TRUE(warmup::prepared(0));
  if (c10::cuda::device_count() < 2) return;
  // The source, not the current device (whose pool serves copies to the CPU).
  const c10::IValue on_second = mtc::start_copy(on_gpu, c10::Device(c10::kCUDA, 1)).get();
  warmup::forget(1);
  const c10::cuda::CUDAGuard current(0);
  (void)mtc::start_copy(on_second, kCpu).get();
  EXPECT_TRUE(warmup::prepared(1)) << "a copy from device 1 did not prepare it";
}

}  // namespace
