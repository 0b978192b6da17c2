// Faults in the middle of copies on a GPU. Whatever fails, get() must say so with a clear
// error, everything the copy held (pinned staging, device memory) must be released, and the
// next copy must work:
//  - each CUDA call of a copy failing in turn (injected, cuda_fault.h), on every route, and
//    each of its first polls;
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
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "detail/cuda_fault.h"
#include "detail/device_block_stash.h"
#include "detail/pinned_upload.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "watchdog.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::detail::CudaFaultInjection;
using mtc::test::device_allocated;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kCuda1;
using mtc::test::kKiB;
using mtc::test::kMiB;
using mtc::test::pinned_in_use;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
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

// What the engine holds between copies: pinned staging in flight, and device memory on every
// GPU (outputs and chunks of copies that failed must all be freed).
class HeldMemory {
 public:
  HeldMemory() : pinned_(pinned_in_use()) {
    for (c10::DeviceIndex d = 0; d < c10::cuda::device_count(); ++d)
      allocated_[d] = device_allocated(d);
  }
  // A worker may still hold a failed job for a moment after its handle is gone (the task that
  // would have run it), so the figures get a few seconds to come back.
  void expect_unchanged(const std::string& after) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!unchanged() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(pinned_in_use(), pinned_) << "pinned staging still held after " << after;
    for (const auto& [device, bytes] : allocated_) {
      EXPECT_EQ(device_allocated(device), bytes)
          << "device memory on cuda:" << static_cast<int>(device) << " still held after " << after;
    }
  }

 private:
  bool unchanged() const {
    if (pinned_in_use() != pinned_) return false;
    for (const auto& [device, bytes] : allocated_)
      if (device_allocated(device) != bytes) return false;
    return true;
  }

  int64_t pinned_;
  std::map<c10::DeviceIndex, int64_t> allocated_;
};

struct Route {
  std::string name;
  c10::Device source;
  c10::Device target;
  bool pinned_host_outputs = false;
};

std::vector<Route> routes() {
  std::vector<Route> out{
      {"h2d", kCpu, kCuda0}, {"d2h", kCuda0, kCpu}, {"d2h to pinned outputs", kCuda0, kCpu, true}};
  if (c10::cuda::device_count() >= 2) out.push_back({"d2d", kCuda0, kCuda1});
  return out;
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

// The fault tests count the device memory a failed copy leaves and the allocator's calls: device
// memory made ahead for the next copy (device_block_stash.h) would be counted too, so they run
// without it (a copy that took kept blocks and fails has its own sweep, in
// device_block_stash_gpu_test.cpp).
class CopierFaultGpuTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    mtc::detail::device_block_stash::set_enabled(false);
  }
  void TearDown() override {
    mtc::detail::device_block_stash::set_enabled(true);
    GpuTest::TearDown();
  }
};

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
        const std::string message = message_of(e);
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
