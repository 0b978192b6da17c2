// The WorkerPool that runs copy orchestration, split walks and parallel staging fills. No GPU
// needed.
#include "detail/worker_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <iostream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace mtc::detail {
namespace {

// Waits, yielding, until `done` has counted `count` tasks or 10 s have passed (a lost wake-up
// would leave a task queued for ever); the caller checks which.
void wait_for_tasks(const std::atomic<int>& done, int count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (done.load() < count && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
}

TEST(WorkerPool, RunsEverySubmittedTask) {
  WorkerPool pool(3, std::chrono::microseconds(50));
  EXPECT_EQ(pool.size(), 3);
  std::atomic<int> done{0};
  constexpr int kTasks = 5000;
  for (int i = 0; i < kTasks; ++i) pool.submit([&done] { done.fetch_add(1); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done.load() < kTasks && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(done.load(), kTasks);
}

TEST(WorkerPool, WakesASleepingWorker) {
  // Submissions spaced past the spin window must still run (no lost wake-up).
  WorkerPool pool(2, std::chrono::microseconds(10));
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.submit([&done] { done.fetch_add(1); });
    wait_for_tasks(done, i + 1);
    ASSERT_EQ(done.load(), i + 1) << "task " << i << " never ran";
  }
}

// Tasks claimed by count before the queue is locked: with several threads submitting and several
// taking (workers and callers helping through try_run_one), every task runs exactly once.
TEST(WorkerPool, EveryTaskRunsExactlyOnceWithManySubmittersAndTakers) {
  WorkerPool pool(3, std::chrono::microseconds(20));
  constexpr int kSubmitters = 4;
  constexpr int kEach = 2000;
  std::vector<std::atomic<int>> runs(kSubmitters * kEach);
  std::atomic<int> done{0};
  std::atomic<bool> submitted{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kSubmitters; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        pool.submit([&runs, &done, k = t * kEach + i] {
          runs[static_cast<size_t>(k)].fetch_add(1);
          done.fetch_add(1);
        });
        if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
  }
  // A lost task fails the test (after 60 s) instead of hanging it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<std::thread> takers;
  for (int t = 0; t < 2; ++t) {
    takers.emplace_back([&] {
      while ((!submitted.load() || done.load() < kSubmitters * kEach) &&
             std::chrono::steady_clock::now() < deadline) {
        if (!pool.try_run_one()) std::this_thread::yield();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  submitted.store(true);
  for (std::thread& t : takers) t.join();
  ASSERT_EQ(done.load(), kSubmitters * kEach) << "tasks were lost";
  for (size_t k = 0; k < runs.size(); ++k) ASSERT_EQ(runs[k].load(), 1) << "task " << k;
}

TEST(WorkerPool, ParallelForRunsEachPartExactlyOnce) {
  WorkerPool pool(4, std::chrono::microseconds(50));
  for (const int64_t parts : {0, 1, 2, 3, 5, 17, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(parts));
    pool.parallel_for(parts, [&hits](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
    for (int64_t i = 0; i < parts; ++i)
      EXPECT_EQ(hits[i].load(), 1) << parts << " parts, part " << i;
  }
}

TEST(WorkerPool, ParallelForWithOnePartRunsOnTheCaller) {
  WorkerPool pool(2, std::chrono::microseconds(50));
  std::thread::id ran_on;
  pool.parallel_for(1, [&ran_on](int64_t) { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(WorkerPool, ParallelForRethrowsAfterEveryPartRan) {
  WorkerPool pool(3, std::chrono::microseconds(50));
  std::atomic<int> ran{0};
  try {
    pool.parallel_for(64, [&ran](int64_t i) {
      ran.fetch_add(1);
      if (i == 37) throw std::runtime_error("part 37 failed");
    });
    ADD_FAILURE() << "parallel_for swallowed the exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 37 failed");
  }
  EXPECT_EQ(ran.load(), 64);
}

TEST(WorkerPool, NestedParallelForFromWorkersDoesNotDeadlock) {
  // The engine calls parallel_for from a worker (a background copy's staging fill) while the
  // pool's other workers may be busy: the caller must be able to finish alone.
  WorkerPool pool(2, std::chrono::microseconds(50));
  std::atomic<int64_t> sum{0};
  std::atomic<int> finished{0};
  for (int t = 0; t < 6; ++t) {
    pool.submit([&] {
      pool.parallel_for(50, [&sum](int64_t i) { sum.fetch_add(i); });
      finished.fetch_add(1);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (finished.load() < 6 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(finished.load(), 6);
  EXPECT_EQ(sum.load(), 6 * (49 * 50 / 2));
}

// Queues `count` tasks from this thread, the k-th at `intervals[k % size]` after the one before
// (sleeping in between, as a training loop between its copies), each waited for. Returns the
// pool's early wakes.
int64_t submit_spaced(WorkerPool& pool, std::initializer_list<std::chrono::milliseconds> intervals,
                      int count) {
  std::atomic<int> done{0};
  auto at = std::chrono::steady_clock::now();
  for (int k = 0; k < count; ++k) {
    at += *(intervals.begin() + k % static_cast<int>(intervals.size()));
    std::this_thread::sleep_until(at);
    pool.submit([&done] { done.fetch_add(1); });
    wait_for_tasks(done, k + 1);
    EXPECT_EQ(done.load(), k + 1) << "task " << k << " never ran";
  }
  return pool.anticipated_wakes();
}

// Tasks every 8 ms, one at a time: once the pool has seen eight intervals within 500 us of each
// other, workers wake shortly before each next task, one per task the last burst queued (not
// all three). With `parts`, each task runs a parallel_for 1 ms in (as a GPU->CPU copy places its
// outputs a DMA after it started): its two helper tasks belong to the task's burst, so up to
// three workers wake. On a loaded machine this thread's own wake-ups may not be regular enough
// for a forecast: it measures them, and only a run of regular ones counts. The pool's early-wake
// hook runs once per forecast, however many workers it wakes.
void expect_wakes_ahead_of_regular_tasks(bool parts) {
  using std::chrono::microseconds;
  using std::chrono::steady_clock;
  constexpr auto kInterval = std::chrono::milliseconds(8);
  std::atomic<int64_t> hooks{0};
  WorkerPool pool(3, microseconds(20), /*anticipate=*/true, [&hooks] { hooks.fetch_add(1); });
  EXPECT_TRUE(pool.anticipates());
  std::atomic<int> done{0};
  int regular_run = 0;   // consecutive intervals within 200 us of kInterval
  int forecastable = 0;  // tasks queued after at least 9 of them
  int after_a_wake = 0;  // tasks queued since the first early wake
  int tasks = 0;
  auto at = steady_clock::now();
  steady_clock::time_point last{};
  const auto give_up = at + std::chrono::seconds(4);
  for (int k = 0; after_a_wake < 6 && steady_clock::now() < give_up; ++k) {
    at += kInterval;
    std::this_thread::sleep_until(at);
    const int64_t wakes_before = pool.anticipated_wakes();
    const auto now = steady_clock::now();
    if (k > 0) {
      const auto off = now - last - kInterval;
      regular_run = off < microseconds(200) && off > -microseconds(200) ? regular_run + 1 : 0;
    }
    last = now;
    if (regular_run >= 9) ++forecastable;
    ++tasks;
    pool.submit([&done, &pool, parts] {
      if (parts) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        pool.parallel_for(3, [](int64_t) {});
      }
      done.fetch_add(1);
    });
    wait_for_tasks(done, k + 1);
    ASSERT_EQ(done.load(), k + 1) << "task " << k << " never ran";
    // The wakes between the previous task and this one: one per task of the last burst.
    EXPECT_LE(pool.anticipated_wakes() - wakes_before, parts ? 3 : 1) << "before task " << k;
    if (pool.anticipated_wakes() > 0) ++after_a_wake;
  }
  if (pool.anticipated_wakes() == 0 && forecastable < 5)
    GTEST_SKIP() << "this machine kept only " << forecastable
                 << " tasks regular enough for a forecast; the test needs 5";
  EXPECT_GT(pool.anticipated_wakes(), 0);
  // One task a burst: its one early waker is the first, and runs the hook before it spins. With
  // parts, the first to claim a wake may miss its window while another catches it.
  if (!parts) {
    EXPECT_GE(hooks.load(), 1);
  }
  EXPECT_LE(hooks.load(), std::min<int64_t>(tasks, pool.anticipated_wakes()));
}

TEST(WorkerPool, OneWorkerWakesAheadOfEachRegularlySpacedTask) {
  expect_wakes_ahead_of_regular_tasks(/*parts=*/false);
}

TEST(WorkerPool, ATasksLaterPartsBelongToItsBurst) { expect_wakes_ahead_of_regular_tasks(true); }

TEST(WorkerPool, WorkersDoNotWakeAheadWhenTurnedOff) {
  WorkerPool pool(2, std::chrono::microseconds(20), /*anticipate=*/false);
  EXPECT_EQ(submit_spaced(pool, {std::chrono::milliseconds(6)}, 16), 0);
  pool.set_anticipate(true);
  EXPECT_TRUE(pool.anticipates());
}

TEST(WorkerPool, WorkersDoNotWakeAheadOfIrregularTasks) {
  // Intervals 4 ms and 12 ms apart: far past what a forecast's window may span.
  WorkerPool pool(2, std::chrono::microseconds(20));
  EXPECT_EQ(submit_spaced(pool, {std::chrono::milliseconds(4), std::chrono::milliseconds(12)}, 16),
            0);
}

// Copies every 8 ms whose job queues two helper parts at once (so three workers wake early per
// burst, all spinning when the next job comes). Counts the bursts warmed by the hook before their
// job came, and among them those whose job ran on the hook's thread.
struct WarmClaims {
  int warmed = 0;
  int taken_by_warm = 0;
};
WarmClaims claims_after_warm_ups(bool warm_first) {
  WorkerPool::set_warm_worker_first(warm_first);
  std::atomic<std::thread::id> hook_thread{};
  std::atomic<int64_t> hooks{0};
  WorkerPool pool(3, std::chrono::microseconds(20), /*anticipate=*/true, [&] {
    hook_thread.store(std::this_thread::get_id());
    hooks.fetch_add(1);
  });
  WarmClaims claims;
  std::atomic<int> done{0};
  std::atomic<bool> on_warm_thread{false};
  int64_t hooks_seen = 0;
  auto at = std::chrono::steady_clock::now();
  const auto give_up = at + std::chrono::seconds(4);
  for (int k = 0; claims.warmed < 12 && std::chrono::steady_clock::now() < give_up; ++k) {
    at += std::chrono::milliseconds(8);
    std::this_thread::sleep_until(at);
    const bool warmed = hooks.load() > hooks_seen;
    pool.submit([&] {
      on_warm_thread.store(std::this_thread::get_id() == hook_thread.load());
      pool.parallel_for(3, [](int64_t) {});
      done.fetch_add(1);
    });
    wait_for_tasks(done, k + 1);
    EXPECT_EQ(done.load(), k + 1) << "task " << k << " never ran";
    if (warmed) {
      ++claims.warmed;
      if (on_warm_thread.load()) ++claims.taken_by_warm;
    }
    hooks_seen = hooks.load();
  }
  WorkerPool::set_warm_worker_first(true);
  return claims;
}

// The worker that warmed the driver takes the copy that comes while it spins, though two more
// workers spin beside it: at least 7 jobs in 10, where without the first claim each of the three
// takes about a third. Needs a core for each (on 2 CPUs it took 5-10 of 12, against 2-3 without)
// and a machine regular enough for a forecast.
TEST(WorkerPool, TheWorkerThatRanTheEarlyWakeHookTakesTheNextJob) {
  if (std::thread::hardware_concurrency() < 5)
    GTEST_SKIP() << "needs 5 CPUs (three spinning workers, this thread), this machine has "
                 << std::thread::hardware_concurrency();
  const WarmClaims on = claims_after_warm_ups(true);
  if (on.warmed < 6) GTEST_SKIP() << "only " << on.warmed << " bursts were warmed; needs 6";
  EXPECT_GE(on.taken_by_warm * 10, on.warmed * 7)
      << on.taken_by_warm << " of " << on.warmed << " warmed jobs ran on the warm worker";
  const WarmClaims off = claims_after_warm_ups(false);
  std::cout << "warmed jobs on the warm worker: " << on.taken_by_warm << " of " << on.warmed
            << " with the first claim, " << off.taken_by_warm << " of " << off.warmed
            << " without\n";
}

TEST(WorkerPool, ConcurrentParallelForCallers) {
  WorkerPool pool(3, std::chrono::microseconds(50));
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&pool, &bad] {
      for (int round = 0; round < 200; ++round) {
        std::vector<std::atomic<int>> hits(13);
        pool.parallel_for(13, [&hits](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
        for (auto& h : hits)
          if (h.load() != 1) bad.fetch_add(1);
      }
    });
  }
  for (std::thread& th : callers) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace mtc::detail

namespace mtc::detail {
namespace {

// Every worker of a pool confined to one CPU runs its tasks there, and set_cpus({}) lets them run
// anywhere again (a benchmark's variant confines each GPU's workers to a slice of the CPUs).
TEST(WorkerPool, SetCpusConfinesEveryWorker) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) last = c;
  ASSERT_GE(last, 0);
  WorkerPool pool(3, std::chrono::microseconds(0));
  ASSERT_TRUE(pool.set_cpus({last}));
  std::atomic<int> elsewhere{0}, done{0};
  constexpr int kTasks = 60;
  for (int i = 0; i < kTasks; ++i) {
    pool.submit([&] {
      if (sched_getcpu() != last) elsewhere.fetch_add(1);
      done.fetch_add(1);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done.load() < kTasks && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(done.load(), kTasks);
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_TRUE(pool.set_cpus({}));
  EXPECT_FALSE(pool.set_cpus({CPU_SETSIZE + 5})) << "no CPU at all: the system refuses";
}

}  // namespace
}  // namespace mtc::detail
