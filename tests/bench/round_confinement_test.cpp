#include "runner/measure/round_confinement.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <thread>

#include "runner/env/host_state.h"

namespace mtc::bench {
namespace {

std::vector<int> thread_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

TEST(RoundConfinement, ConfinesEveryThreadAndGivesTheCpusBack) {
  const std::vector<int> allowed = process_affinity();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs to confine to one";
  // A thread started before the confinement (as the engine's workers are) is confined too.
  std::atomic<bool> stop{false};
  std::atomic<int> other_count{0};
  std::atomic<int> step{0};
  std::thread other([&] {
    while (!stop.load()) {
      if (step.load() == 1) {
        other_count = static_cast<int>(thread_cpus().size());
        step = 2;
      }
      std::this_thread::yield();
    }
  });
  {
    RoundConfinement confinement(1);
    EXPECT_EQ(confinement.confine(7, 0, 0), "");
    ASSERT_EQ(confinement.current().size(), 1u);
    EXPECT_EQ(thread_cpus(), confinement.current());
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    EXPECT_EQ(other_count.load(), 1);
  }
  EXPECT_EQ(thread_cpus(), allowed);
  stop = true;
  other.join();
}

TEST(RoundConfinement, DoesNothingWhenOff) {
  const std::vector<int> before = process_affinity();
  {
    RoundConfinement confinement(0);
    EXPECT_EQ(confinement.confine(7, 0, 0), "");
    EXPECT_TRUE(confinement.current().empty());
    EXPECT_EQ(thread_cpus(), before);
  }
  EXPECT_EQ(thread_cpus(), before);
}

// More CPUs than the process has confines nothing, and says so once (the report's notes) rather
// than reporting rounds confined to CPUs that were never drawn.
TEST(RoundConfinement, MoreCpusThanTheProcessHasIsSaidOnce) {
  const std::vector<int> before = process_affinity();
  const int64_t asked = static_cast<int64_t>(before.size()) + 1;
  RoundConfinement confinement(asked);
  EXPECT_EQ(confinement.confine(7, 0, 0),
            fmt::format("--round-cpus {}: only {} CPU{} to draw from; rounds ran on all of them",
                        asked, before.size(), before.size() == 1 ? "" : "s"));
  EXPECT_EQ(confinement.confine(7, 1, 0), "");
  EXPECT_EQ(thread_cpus(), before);
}

}  // namespace
}  // namespace mtc::bench
