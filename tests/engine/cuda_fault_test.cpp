// The fault-injection seam of MTC_CUDA_CHECK (cuda_fault.h): the armed call fails once, with the
// chosen error, without being made; every other call runs. No GPU needed: the checked
// expressions here only count how often they run.
#include "detail/cuda_fault.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "detail/cuda_check.h"

namespace {

using mtc::detail::cuda_event_query;
using mtc::detail::CudaFaultInjection;

std::atomic<int> calls_made{0};

cudaError_t counted_call() {
  ++calls_made;
  return cudaSuccess;
}

TEST(CudaFaultInjection, TheArmedCallFailsOnceWithoutBeingMade) {
  calls_made = 0;
  CudaFaultInjection::arm(3, cudaErrorInvalidValue);
  int failures = 0;
  for (int i = 0; i < 6; ++i) {
    try {
      MTC_CUDA_CHECK(counted_call());
    } catch (const c10::Error& e) {
      ++failures;
      EXPECT_EQ(i, 2);
      const std::string what = e.what_without_backtrace();
      EXPECT_NE(what.find("counted_call() failed: cudaErrorInvalidValue"), std::string::npos)
          << what;
    }
  }
  EXPECT_EQ(failures, 1);
  EXPECT_EQ(calls_made.load(), 5) << "the failing call was made anyway";
  EXPECT_TRUE(CudaFaultInjection::disarm());
  EXPECT_FALSE(CudaFaultInjection::disarm()) << "fired is reported once";
}

// An event query's failure names the call too (the fault fires before any runtime call, so no
// GPU is needed); the GPU fault sweeps look for "mtc: cuda" in every error.
TEST(CudaFaultInjection, AFailedEventQueryNamesTheCall) {
  CudaFaultInjection::arm_poll(1, cudaErrorInvalidValue);
  bool done = true;
  try {
    MTC_CUDA_POLL(cuda_event_query(nullptr, done));
    ADD_FAILURE() << "the armed query did not fail";
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    EXPECT_NE(what.find("mtc: cuda_event_query(nullptr, done) failed: cudaErrorInvalidValue"),
              std::string::npos)
        << what;
  }
  EXPECT_TRUE(CudaFaultInjection::disarm());
}

// Polls and the other calls are counted apart: a copy makes as many of the others in every run,
// however many times it polls meanwhile. Each round makes a poll and a call; returns the round
// whose checked call of the kind `polls` failed (0: none did), while the other kind never fails.
int round_that_fails(bool polls) {
  int failed_at = 0;
  for (int round = 1; round <= 4; ++round) {
    try {
      MTC_CUDA_POLL(counted_call());
    } catch (const c10::Error&) {
      if (!polls) ADD_FAILURE() << "a poll took the call's fault";
      failed_at = round;
    }
    try {
      MTC_CUDA_CHECK(counted_call());
    } catch (const c10::Error&) {
      if (polls) ADD_FAILURE() << "a call took the poll's fault";
      failed_at = round;
    }
  }
  return failed_at;
}

TEST(CudaFaultInjection, PollsAndOtherCallsAreCountedApart) {
  calls_made = 0;
  CudaFaultInjection::arm(2, cudaErrorInvalidValue);
  EXPECT_EQ(round_that_fails(/*polls=*/false), 2);
  EXPECT_TRUE(CudaFaultInjection::disarm());
  CudaFaultInjection::arm_poll(3, cudaErrorInvalidValue);
  EXPECT_EQ(round_that_fails(/*polls=*/true), 3);
  EXPECT_TRUE(CudaFaultInjection::disarm());
  EXPECT_EQ(calls_made.load(), 14) << "the two failing checks were made anyway";
}

TEST(CudaFaultInjection, DisarmedBeforeItsTurnNothingFails) {
  calls_made = 0;
  CudaFaultInjection::arm(100, cudaErrorMemoryAllocation);
  for (int i = 0; i < 10; ++i) EXPECT_NO_THROW(MTC_CUDA_CHECK(counted_call()));
  EXPECT_FALSE(CudaFaultInjection::disarm());
  for (int i = 0; i < 200; ++i) EXPECT_NO_THROW(MTC_CUDA_CHECK(counted_call()));
  EXPECT_EQ(calls_made.load(), 210);
}

// Calls checked on many threads at once: exactly one of them fails.
TEST(CudaFaultInjection, ExactlyOneOfManyConcurrentCallsFails) {
  CudaFaultInjection::arm(3000, cudaErrorInvalidValue);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&failures] {
      for (int i = 0; i < 1000; ++i) {
        try {
          MTC_CUDA_CHECK(counted_call());
        } catch (const c10::Error&) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 1);
  EXPECT_TRUE(CudaFaultInjection::disarm());
}

}  // namespace
