// The WorkerPool that runs copy orchestration, split walks and parallel staging fills. No GPU
// needed.
#include "detail/worker_pool.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace mtc::detail {
namespace {

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
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (done.load() <= i && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    ASSERT_EQ(done.load(), i + 1) << "task " << i << " never ran";
  }
}

TEST(WorkerPool, InstanceFollowsTheEnvironmentAndTheDevicesInUse) {
  WorkerPool& pool = WorkerPool::instance();
  EXPECT_EQ(&pool, &WorkerPool::instance());
  const WorkerCount count = WorkerCount::from_environment();
  EXPECT_EQ(pool.size(), count.for_devices(pool.devices_in_use()));
  EXPECT_GE(pool.size(), 1);
}

TEST(WorkerCount, FollowsTheDevicesUpToTheHardwareThreads) {
  const WorkerCount sixteen{.hardware_threads = 16};
  EXPECT_EQ(sixteen.for_devices(0), kWorkersPerDevice);  // CPU-only copies: one device's worth
  EXPECT_EQ(sixteen.for_devices(1), 4);
  EXPECT_EQ(sixteen.for_devices(2), 8);
  EXPECT_EQ(sixteen.for_devices(4), 16);
  EXPECT_EQ(sixteen.for_devices(8), 16);
  const WorkerCount two{.hardware_threads = 2};
  for (const int devices : {0, 1, 2, 8}) EXPECT_EQ(two.for_devices(devices), 2) << devices;
  EXPECT_EQ(WorkerCount{.hardware_threads = 0}.for_devices(3), 1);  // unknown: at least one
  EXPECT_EQ((WorkerCount{.per_device = 3, .hardware_threads = 128}.for_devices(8)), 24);
}

TEST(WorkerCount, AFixedCountIgnoresTheDevices) {
  const WorkerCount fixed{.fixed = 3, .hardware_threads = 64};
  for (const int devices : {0, 1, 2, 8}) EXPECT_EQ(fixed.for_devices(devices), 3) << devices;
  // More than the hardware threads when asked for.
  EXPECT_EQ((WorkerCount{.fixed = 12, .hardware_threads = 2}.for_devices(1)), 12);
}

// Passes only if `workers` tasks run at once on the pool: each waits until all have started.
void expect_concurrent_workers(WorkerPool& pool, int workers) {
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::atomic<bool> release{false};
  for (int i = 0; i < workers; ++i) {
    pool.submit([&] {
      started.fetch_add(1);
      while (!release.load()) std::this_thread::yield();
      finished.fetch_add(1);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (started.load() < workers && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(started.load(), workers) << "fewer workers ran at once than the pool's size";
  release.store(true);
  // The tasks reference this frame; a task that never started is run here.
  while (finished.load() < workers) {
    if (!pool.try_run_one()) std::this_thread::yield();
  }
}

TEST(WorkerPool, GrowsOnceForEachNewDevice) {
  WorkerPool pool(WorkerCount{.per_device = 2, .hardware_threads = 64},
                  std::chrono::microseconds(50));
  EXPECT_EQ(pool.size(), 2);
  EXPECT_EQ(pool.devices_in_use(), 0);
  pool.use_device(0);
  EXPECT_EQ(pool.size(), 2);
  pool.use_device(0);
  pool.use_device(3);
  EXPECT_EQ(pool.size(), 4);
  EXPECT_EQ(pool.devices_in_use(), 2);
  pool.use_device(3);
  pool.use_device(127);
  EXPECT_EQ(pool.size(), 6);
  EXPECT_EQ(pool.devices_in_use(), 3);
  pool.use_device(-1);  // not a device: ignored
  pool.use_device(128);
  EXPECT_EQ(pool.size(), 6);
  expect_concurrent_workers(pool, 6);
}

TEST(WorkerPool, AFixedPoolDoesNotGrow) {
  WorkerPool pool(3, std::chrono::microseconds(50));
  for (int d = 0; d < 8; ++d) pool.use_device(d);
  EXPECT_EQ(pool.devices_in_use(), 8);
  EXPECT_EQ(pool.size(), 3);
}

TEST(WorkerPool, ConcurrentFirstUsesCountEveryDevice) {
  WorkerPool pool(WorkerCount{.per_device = 1, .hardware_threads = 64},
                  std::chrono::microseconds(50));
  std::vector<std::thread> callers;
  for (int d = 0; d < 8; ++d) {
    callers.emplace_back([&pool, d] {
      for (int k = 0; k < 100; ++k) pool.use_device((d + k) % 8);
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(pool.devices_in_use(), 8);
  EXPECT_EQ(pool.size(), 8);
  std::atomic<int> done{0};
  pool.parallel_for(64, [&done](int64_t) { done.fetch_add(1); });
  EXPECT_EQ(done.load(), 64);
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

TEST(WorkerPool, WorkerCountVariableParsesCounts) {
  EXPECT_EQ(parse_worker_threads(nullptr, 4), 4);
  EXPECT_EQ(parse_worker_threads("", 3), 3);
  EXPECT_EQ(parse_worker_threads("1", 4), 1);
  EXPECT_EQ(parse_worker_threads("12", 4), 12);
  EXPECT_EQ(parse_worker_threads("256", 4), 256);
}

TEST(WorkerPool, WorkerCountVariableRejectsAnythingElseNamingIt) {
  for (const char* bad : {"0", "257", "-1", "two", "4 ", "1.5", "99999999999"}) {
    SCOPED_TRACE(bad);
    try {
      parse_worker_threads(bad, 4);
      ADD_FAILURE() << "accepted";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(kWorkerThreadsVariable) + "='" + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace mtc::detail
