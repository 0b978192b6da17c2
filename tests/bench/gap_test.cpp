#include "runner/measure/gap.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <time.h>

namespace mtc::bench {
namespace {

// What this thread did in one 50 ms gap: its CPU time, and how often it gave the CPU up of its
// own accord (a sleep does; a busy caller never does, however often others take the CPU from it).
struct InGap {
  double cpu_seconds = 0;
  long voluntary_switches = 0;
  int64_t touched = 0;
};

InGap in_gap(const Gap& gap) {
  timespec cpu_before{}, cpu_after{};
  rusage before{}, after{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_before);
  getrusage(RUSAGE_THREAD, &before);
  InGap r;
  r.touched = gap.pass(0.05);
  getrusage(RUSAGE_THREAD, &after);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_after);
  r.cpu_seconds = static_cast<double>(cpu_after.tv_sec - cpu_before.tv_sec) +
                  static_cast<double>(cpu_after.tv_nsec - cpu_before.tv_nsec) * 1e-9;
  r.voluntary_switches = after.ru_nvcsw - before.ru_nvcsw;
  return r;
}

// The CPU time a busy gap gets depends on who else runs: in a CI job on a shared 2-core machine
// it once got 31 % of the 50 ms. That it never leaves the CPU of its own accord does not.
TEST(Gap, BusyKeepsTheCallerOnTheCpuTouchingItsBuffer) {
  const Gap gap(GapMode::kBusy, 1 << 20);
  gap.pass(0.001);  // the buffer's first pass maps its pages
  const InGap r = in_gap(gap);
  EXPECT_EQ(r.voluntary_switches, 0) << "a busy gap gave the CPU up";
  EXPECT_GT(r.cpu_seconds, 0.0);
  EXPECT_GE(r.touched, 1 << 20) << "50 ms sweep a 1 MiB buffer at least once";
}

TEST(Gap, SleepLeavesTheCpu) {
  const Gap gap(GapMode::kSleep, int64_t{32} << 20);
  const InGap r = in_gap(gap);
  EXPECT_GE(r.voluntary_switches, 1);
  EXPECT_LT(r.cpu_seconds, 0.005);
  EXPECT_EQ(r.touched, 0);
}

TEST(Gap, NamesRoundTripAndStepBusyIsTheBusyOne) {
  for (GapMode mode : {GapMode::kSleep, GapMode::kBusy})
    EXPECT_EQ(parse_gap_mode(to_string(mode)), mode);
  EXPECT_FALSE(parse_gap_mode("nap"));
  EXPECT_EQ(gap_mode_of(Pattern::kStepBusy), GapMode::kBusy);
  EXPECT_EQ(gap_mode_of(Pattern::kStep), GapMode::kSleep);
}

}  // namespace
}  // namespace mtc::bench
