// Faults in the middle of copies on a GPU. Whatever fails, get() must say so with a clear
// error, everything the copy held (pinned staging, device memory) must be released, and the
// next copy must work (each CUDA call failing in turn is copier_fault_sweep_test.cpp's case):
//  - the device running out of memory for a structure larger than it can hold (the caching
//    allocator's memory fraction makes the device small, so nothing large is allocated);
//  - the pinned pool exhausted by copies in flight together, under a limit;
//  - in child processes: a device-side assert in work queued before the copy (it spoils the
//    CUDA context for good), and the pool limit read from MTC_PINNED_POOL_LIMIT_BYTES.
// A single tensor larger than the device is ErrorPropagationGpu's case
// (copier_gpu_handles_test.cpp). Skipped without a CUDA device.
#include <ATen/core/List.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "fault_test_support.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "watchdog.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::CopierFaultGpuTest;
using mtc::test::expect_structure_copy;
using mtc::test::HeldMemory;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kKiB;
using mtc::test::kMiB;
using mtc::test::pinned_in_use;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
using mtc::test::Route;
using mtc::test::routes;
using mtc::test::ScopedPoolLimit;
using mtc::test::Watchdog;

constexpr auto kCopyDeadline = std::chrono::seconds(120);

std::string message_of(const c10::Error& e) { return e.what_without_backtrace(); }

int64_t device_reserved(c10::DeviceIndex device) {
  using c10::CachingDeviceAllocator::StatType;
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device)
      .reserved_bytes[static_cast<size_t>(StatType::AGGREGATE)]
      .current;
}

// Sets the caching allocator's memory fraction of one GPU for one test, and puts it back.
class ScopedMemoryFraction {
 public:
  ScopedMemoryFraction(c10::DeviceIndex device, double fraction)
      : device_(device), previous_(c10::cuda::CUDACachingAllocator::getMemoryFraction(device)) {
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, device);
  }
  ScopedMemoryFraction(const ScopedMemoryFraction&) = delete;  // restores once
  ScopedMemoryFraction& operator=(const ScopedMemoryFraction&) = delete;
  ~ScopedMemoryFraction() {
    c10::cuda::CUDACachingAllocator::setMemoryFraction(previous_, device_);
  }

 private:
  c10::DeviceIndex device_;
  double previous_;
};

// A structure whose total does not fit the device: the caching allocator's memory fraction
// leaves 64 MiB for it, and it needs 192 MiB. The out-of-memory error comes from get(), every
// output made before it is freed, and with the memory back the same copy works.
TEST_F(CopierFaultGpuTest, FaultDeviceOutOfMemoryForAStructureLargerThanTheDevice) {
  if (std::getenv("PYTORCH_NO_CUDA_MEMORY_CACHING") != nullptr)
    GTEST_SKIP() << "PYTORCH_NO_CUDA_MEMORY_CACHING is set: the memory fraction applies to the "
                    "caching allocator only";
  Watchdog watchdog(kCopyDeadline * 4, "the device out-of-memory test");
  for (const Route& route : routes()) {
    if (route.target.is_cpu()) continue;  // device memory runs out on the target
    SCOPED_TRACE(route.name);
    c10::impl::GenericList list(c10::AnyType::get());
    for (int i = 0; i < 40; ++i) list.push_back(random_tensor(at::kFloat, {100}, route.source));
    for (int i = 0; i < 12; ++i)
      list.push_back(random_tensor(at::kFloat, {4 * kMiB}, route.source));
    const c10::DeviceIndex device = route.target.index();
    mtc::release_idle_pinned_memory();
    const HeldMemory before;
    for (const bool background : {true, false}) {
      SCOPED_TRACE(background ? "background thread" : "on the caller");
      CopyOptions options;
      options.use_background_thread = background;
      {
        // Memory the allocator caches would take the outputs without asking the device.
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        c10::cuda::CUDACachingAllocator::emptyCache();
        size_t free_bytes = 0;
        size_t total_bytes = 0;
        {
          const c10::cuda::CUDAGuard guard(device);
          ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
        }
        const double room = static_cast<double>(device_reserved(device) + 64 * kMiB);
        const ScopedMemoryFraction small_device(device, room / static_cast<double>(total_bytes));
        CopyHandle h;
        ASSERT_NO_THROW(h = start_copy(list, route.target, options))
            << "the failure belongs to get()";
        try {
          h.get();
          ADD_FAILURE() << "get() returned although the outputs do not fit";
        } catch (const c10::Error& e) {
          EXPECT_NE(message_of(e).find("out of memory"), std::string::npos) << message_of(e);
        }
      }
      before.expect_unchanged("the out-of-memory failure");
      CopyHandle ok = start_copy(list, route.target, options);
      expect_structure_copy(ok.get(), list, route.target);
    }
    mtc::release_idle_pinned_memory();
    EXPECT_EQ(mtc::pinned_pool_stats().reserved_bytes, 0) << "pinned memory not given back";
    EXPECT_EQ(mtc::pinned_pool_stats().in_use_bytes, 0);
  }
}

// More copies in flight than the pool's limit has room for: the ones that find the pool full
// fail from get() with the limit's error, the others are correct, the pool never passes the
// limit, and once they are collected everything is back.
TEST_F(CopierFaultGpuTest, FaultPinnedPoolExhaustedByCopiesInFlight) {
  Watchdog watchdog(kCopyDeadline, "the pinned exhaustion test");
  constexpr int kInFlight = 24;
  constexpr int64_t kLimit = 512 * kKiB;  // about three reference batches' staging
  for (const Route& route : routes()) {
    if (route.name == "d2d") continue;  // device to device stages nothing
    SCOPED_TRACE(route.name);
    const c10::IValue batch = reference_batch(route.source);
    mtc::release_idle_pinned_memory();
    mtc::reset_pinned_pool_peaks();
    int failed = 0;
    {
      const ScopedPoolLimit limit(kLimit);
      std::vector<CopyHandle> handles;
      for (int i = 0; i < kInFlight; ++i) handles.push_back(start_copy(batch, route.target));
      for (CopyHandle& h : handles) {
        try {
          expect_structure_copy(h.get(), batch, route.target);
        } catch (const c10::Error& e) {
          ++failed;
          EXPECT_NE(message_of(e).find("limit of 524288 bytes"), std::string::npos)
              << message_of(e);
        }
      }
      EXPECT_LE(mtc::pinned_pool_stats().peak_reserved_bytes, kLimit);
    }
    // Packed chunks to a GPU need their staging; back to the host the engine may make do.
    if (route.target.is_cuda()) {
      EXPECT_GT(failed, 0) << "every copy found room: the test no longer exhausts the pool";
    }
    EXPECT_LT(failed, kInFlight) << "no copy found room";
    EXPECT_EQ(pinned_in_use(), baseline_in_use_);
    CopyHandle after = start_copy(batch, route.target);
    expect_structure_copy(after.get(), batch, route.target);
    mtc::release_idle_pinned_memory();
    EXPECT_EQ(mtc::pinned_pool_stats().reserved_bytes, 0);
    std::cout << "[          ] " << route.name << ": " << failed << " of " << kInFlight
              << " copies in flight found the pool full\n";
  }
}

// Child processes (gtest death tests, re-executed so CUDA starts afresh in them). Each child
// exits 0 when the fault came out as it should; another code says what went wrong, and an alarm
// turns a hang into a failure.
enum ChildExit { kAsExpected = 0, kReturned = 1, kWrongError = 2, kNoFault = 3 };

// A kernel that fails a device-side assert (an index out of range) is queued before the copy
// on the stream the copy is ordered after. The context is then unusable: every later CUDA call
// of the process fails. The copies must fail from get() with the assert named, not hang.
TEST(CopierFaultGpuDeathTest, DeviceSideAssertBeforeACopySurfacesFromGet) {
  if (c10::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        alarm(120);
        const c10::IValue on_gpu = reference_batch(kCuda0);
        const c10::IValue on_cpu = reference_batch(kCpu);
        (void)cudaDeviceSynchronize();
        const at::Tensor table = at::zeros({4}, at::TensorOptions().device(kCuda0));
        const at::Tensor index = at::full({1}, 10, at::TensorOptions(at::kLong).device(kCuda0));
        (void)at::index_select(table, 0, index);  // asserts on the device, later
        int code = kAsExpected;
        for (const bool to_host : {true, false}) {
          try {
            CopyHandle h = start_copy(to_host ? on_gpu : on_cpu, to_host ? kCpu : kCuda0);
            h.get();
            std::fprintf(stderr, "get() returned after the device-side assert\n");
            code = kReturned;
          } catch (const c10::Error& e) {
            const std::string message = message_of(e);
            std::fprintf(stderr, "copy %s: %s\n", to_host ? "to the host" : "to the GPU",
                         message.c_str());
            if (message.find("device-side assert") == std::string::npos) code = kWrongError;
          }
        }
        if (cudaDeviceSynchronize() == cudaSuccess) {
          std::fprintf(stderr, "no device fault happened: the out-of-range index did not assert\n");
          code = kNoFault;
        }
        std::fflush(stderr);
        _exit(code);  // skips static destructors, which would call into the dead context
      },
      ::testing::ExitedWithCode(kAsExpected), "");
}

// The limit from the environment, read when the pool is first used: a copy that needs more
// fails from get() naming the variable, and a smaller one works.
TEST(CopierFaultGpuDeathTest, PinnedPoolLimitFromTheEnvironment) {
  if (c10::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        alarm(120);
        setenv("MTC_PINNED_POOL_LIMIT_BYTES", "65536", 1);
        int code = kAsExpected;
        try {
          start_copy(reference_batch(kCpu), kCuda0).get();  // about 160 KB of staging
          std::fprintf(stderr, "get() returned although the staging exceeds the limit\n");
          code = kReturned;
        } catch (const c10::Error& e) {
          const std::string message = message_of(e);
          std::fprintf(stderr, "%s\n", message.c_str());
          if (message.find("MTC_PINNED_POOL_LIMIT_BYTES") == std::string::npos) code = kWrongError;
        }
        c10::impl::GenericList small(c10::AnyType::get());
        for (int i = 0; i < 8; ++i) small.push_back(random_tensor(at::kFloat, {100}));
        try {
          start_copy(small, kCuda0).get();
        } catch (const c10::Error& e) {
          std::fprintf(stderr, "a copy within the limit failed: %s\n", message_of(e).c_str());
          code = kWrongError;
        }
        if (mtc::pinned_pool_stats().limit_bytes != 65536) {
          std::fprintf(stderr, "the pool's limit is not the variable's\n");
          code = kNoFault;
        }
        std::fflush(stderr);
        _exit(code);
      },
      ::testing::ExitedWithCode(kAsExpected), "");
}

}  // namespace
