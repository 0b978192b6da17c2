#include "runner/measure/gap.h"

#include <gtest/gtest.h>
#include <time.h>

namespace mtc::bench {
namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU time this thread spends in one 50 ms gap.
double cpu_in_gap(const Gap& gap, int64_t* touched = nullptr) {
  const double before = thread_cpu_seconds();
  const int64_t bytes = gap.pass(0.05);
  if (touched != nullptr) *touched = bytes;
  return thread_cpu_seconds() - before;
}

TEST(Gap, BusyKeepsTheCallerOnTheCpuTouchingItsBuffer) {
  Gap gap(GapMode::kBusy, 1 << 20);
  int64_t touched = 0;
  // On a shared 2-core machine the thread may lose part of the gap to others: a third is ample
  // to tell it from a sleep, which uses next to nothing.
  EXPECT_GT(cpu_in_gap(gap, &touched), 0.05 / 3);
  EXPECT_GE(touched, 1 << 20) << "50 ms sweep a 1 MiB buffer at least once";
}

TEST(Gap, SleepLeavesTheCpu) {
  Gap gap(GapMode::kSleep, int64_t{32} << 20);
  int64_t touched = -1;
  EXPECT_LT(cpu_in_gap(gap, &touched), 0.005);
  EXPECT_EQ(touched, 0);
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
