// What the GPU tests of the engine share: random and reference inputs, bitwise comparison of
// copied structures, what the engine promises to pack and reuse, and the fixture every GPU test
// derives from (skipped without a device; afterwards no CUDA error and no pinned staging held).
#pragma once

#include <ATen/Context.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "mtc/copier.h"
#include "test_constants.h"

namespace mtc::test {

// True under compute-sanitizer (scripts/gpu-check.sh sanitize sets MTC_UNDER_SANITIZER): the
// host side is slowed so much that a sleep kernel no longer outlasts start_copy, so tests drop
// the expectations that time device work against host work.
inline bool host_timing_distorted() { return std::getenv("MTC_UNDER_SANITIZER") != nullptr; }

// About 100 ms of spinning on a 1.4-2 GHz GPU: long enough that a copy that ignored the stream
// order would visibly overtake it, short enough to keep the suite quick.
inline constexpr int64_t kSleepCycles = 200'000'000;

// Every dtype the engine copies.
const std::vector<at::ScalarType>& all_dtypes();
at::Tensor to_device(const at::Tensor& t, const c10::Device& device);
// Random bytes of `dtype` (NaN payloads included for the floating types; 0/1 for bool).
at::Tensor random_tensor(at::ScalarType dtype, at::IntArrayRef sizes,
                         const c10::Device& device = kCpu);
// The values' bytes, in logical order (lazy conjugation resolved).
std::vector<uint8_t> bytes_of(const at::Tensor& t);
// Same dtype, sizes, device and bits. Strides too where the input layout is dense (the
// engine keeps dense layouts and makes others contiguous).
void expect_copy_of(const at::Tensor& out, const at::Tensor& in, const c10::Device& target);
// `out` has the shape of `in` with new containers; tensor leaves already on the target are the
// very same tensors, the others copies of them.
void expect_structure_copy(const c10::IValue& out, const c10::IValue& in,
                           const c10::Device& target);
// The same structure with every tensor replaced by fn(tensor).
c10::IValue map_tensors(const c10::IValue& v,
                        const std::function<at::Tensor(const at::Tensor&)>& fn);
int64_t total_bytes(const std::vector<at::Tensor>& ts);
// The reference batch of the project's anchors (StreamPETR-like detection metadata):
// 16 samples x (6 camera dicts of 5 tensors + a gt dict of 3) = 528 tensors, 153,628 bytes.
c10::IValue reference_batch(const c10::Device& device = kCpu);
// A batch of every container kind, dtype and layout the engine distinguishes, on `device`.
c10::IValue mixed_batch(const c10::Device& device);
// What the engine promises to pack for a copy to `target`.
int64_t expected_packed(const std::vector<at::Tensor>& ts, const c10::Device& target,
                        const CopyOptions& o);
// Undefined leaves and leaves already on `target`: the ones returned as they are.
int64_t expected_reused(const std::vector<at::Tensor>& ts, const c10::Device& target);
// Conjugate and negative views of finite complex and real values on `device`: packed, one dense
// span, dense but permuted, and not dense.
c10::impl::GenericList math_bit_views(const c10::Device& device);
// The storages of a GPU->CPU copy's outputs `outs` lie back to back in one block of host
// memory: each at the next multiple of `alignment` after the previous one's end (a run that
// one DMA filled). Returns the block's bytes, from the first storage's start to the last one's
// end.
int64_t expect_storages_back_to_back(const std::vector<at::Tensor>& outs, int64_t alignment);
// Pinned staging held by copies in flight (the process-wide pool).
int64_t pinned_in_use();
// Device memory torch's caching allocator has allocated on `device` (its aggregate statistic).
int64_t device_allocated(c10::DeviceIndex device);

// Sets the pinned pool's process-wide limit for one test and puts the previous one back.
class ScopedPoolLimit {
 public:
  explicit ScopedPoolLimit(int64_t bytes) : previous_(mtc::pinned_pool_stats().limit_bytes) {
    mtc::set_pinned_pool_limit(bytes);
  }
  ScopedPoolLimit(const ScopedPoolLimit&) = delete;  // restores once
  ScopedPoolLimit& operator=(const ScopedPoolLimit&) = delete;
  ~ScopedPoolLimit() { mtc::set_pinned_pool_limit(previous_); }

 private:
  int64_t previous_;
};

// Every GPU test: skipped without a device; afterwards no CUDA error and no pinned staging held.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // ctest labels a test `gpu` by its suite's name (tests/CMakeLists.txt). Checked before the
    // skip, so a GPU test named otherwise fails on every machine instead of going unlabelled.
    const std::string suite =
        ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
    ASSERT_TRUE(suite.ends_with("Gpu") || suite.ends_with("GpuTest") ||
                suite.ends_with("GpuDeathTest"))
        << suite << ": the suite of a GPU test is named ...Gpu, so that ctest labels it gpu";
    if (c10::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
    active_ = true;
    // torch's CUDA state, the caching allocator's among it, as a program's first CUDA tensor sets
    // it up: a test may read the allocator's figures before its first copy to a GPU, and a copy
    // between CPUs no longer sets it up (start_copy leaves CUDA alone in a process that has no
    // context). Without it the allocator throws "Invalid device argument".
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    baseline_in_use_ = pinned_in_use();
  }
  void TearDown() override {
    if (!active_) return;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(pinned_in_use(), baseline_in_use_) << "pinned staging still held after the test";
  }
  static bool two_gpus() { return c10::cuda::device_count() >= 2; }

  bool active_ = false;
  int64_t baseline_in_use_ = 0;
};

class MultiGpuTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (!two_gpus())
      GTEST_SKIP() << "needs 2 CUDA devices, " << static_cast<int>(c10::cuda::device_count())
                   << " visible: multi-GPU test skipped";
  }
};

}  // namespace mtc::test
