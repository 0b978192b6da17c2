// What the engine's fault tests share (copier_fault_test.cpp, copier_fault_sweep_test.cpp):
// the memory a copy holds, checked unchanged after a failure; the routes to fail on; the fixture.
#pragma once

#include <c10/core/Device.h>
#include <c10/cuda/CUDAFunctions.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "detail/device_block_stash.h"
#include "gpu_test_support.h"

namespace mtc::test {

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

inline std::vector<Route> routes() {
  std::vector<Route> out{
      {"h2d", kCpu, kCuda0}, {"d2h", kCuda0, kCpu}, {"d2h to pinned outputs", kCuda0, kCpu, true}};
  if (c10::cuda::device_count() >= 2) out.push_back({"d2d", kCuda0, kCuda1});
  return out;
}

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

}  // namespace mtc::test
