// The process's worker pools, one per CUDA device (WorkerPoolSet), their worker count and its
// override, and the pool a thread's work uses (PoolScope). No GPU needed.
#include "detail/worker_pool_set.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "detail/impl_pool.h"

namespace mtc::detail {
namespace {

constexpr std::chrono::microseconds kSpin{50};

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

TEST(WorkerCount, EachPoolHasOneDevicesWorkersUpToItsShareOfTheHardwareThreads) {
  EXPECT_FALSE(WorkerCount{}.shared());
  EXPECT_EQ(WorkerCount{.hardware_threads = 16}.per_pool(), kWorkersPerDevice);
  EXPECT_EQ(WorkerCount{.hardware_threads = 2}.per_pool(), 2);
  EXPECT_EQ(WorkerCount{.hardware_threads = 0}.per_pool(), 1);  // unknown: at least one
  EXPECT_EQ((WorkerCount{.per_device = 3, .hardware_threads = 128}.per_pool()), 3);
  // All devices' pools together stay within the hardware threads.
  EXPECT_EQ((WorkerCount{.hardware_threads = 64, .devices = 4}.per_pool()), 4);
  EXPECT_EQ((WorkerCount{.hardware_threads = 16, .devices = 8}.per_pool()), 2);
  EXPECT_EQ((WorkerCount{.hardware_threads = 16, .devices = 32}.per_pool()), 1);
}

TEST(WorkerCount, AFixedCountIsOnePoolOfThatMany) {
  EXPECT_TRUE(WorkerCount{.fixed = 3}.shared());
  EXPECT_EQ((WorkerCount{.fixed = 3, .hardware_threads = 64}.per_pool()), 3);
  // More than the hardware threads when asked for.
  EXPECT_EQ((WorkerCount{.fixed = 12, .hardware_threads = 2}.per_pool()), 12);
  EXPECT_EQ((WorkerCount{.fixed = 12, .hardware_threads = 16, .devices = 8}.per_pool()), 12);
}

TEST(WorkerPoolSet, InstanceFollowsTheEnvironment) {
  WorkerPoolSet& pools = WorkerPoolSet::instance();
  EXPECT_EQ(&pools, &WorkerPoolSet::instance());
  EXPECT_EQ(pools.for_device(-1).size(), WorkerCount::from_environment().per_pool());
  EXPECT_EQ(pools.for_device(-1).spin(),
            parse_worker_spin(std::getenv(kWorkerSpinVariable), WorkerPool::kDefaultSpin));
  EXPECT_EQ(pools.for_device(-1).anticipates(),
            parse_switch(kWorkerAnticipateVariable, std::getenv(kWorkerAnticipateVariable), true));
}

TEST(WorkerPoolSet, SetSpinReachesEveryPoolTheLaterOnesToo) {
  WorkerPoolSet pools(WorkerCount{.per_device = 1, .hardware_threads = 64}, kSpin);
  EXPECT_EQ(pools.for_device(0).spin(), kSpin);
  pools.set_spin(std::chrono::microseconds(2000));
  EXPECT_EQ(pools.for_device(0).spin(), std::chrono::microseconds(2000));
  EXPECT_EQ(pools.for_device(5).spin(), std::chrono::microseconds(2000));
}

TEST(WorkerPoolSet, SetAnticipateReachesEveryPoolTheLaterOnesToo) {
  WorkerPoolSet pools(WorkerCount{.per_device = 1, .hardware_threads = 64}, kSpin);
  EXPECT_TRUE(pools.for_device(0).anticipates());
  pools.set_anticipate(false);
  EXPECT_FALSE(pools.for_device(0).anticipates());
  EXPECT_FALSE(pools.for_device(5).anticipates());
  WorkerPoolSet off(WorkerCount{.per_device = 1, .hardware_threads = 64}, kSpin, false);
  EXPECT_FALSE(off.for_device(-1).anticipates());
}

// The switches read from the environment: MTC_WORKER_ANTICIPATE, MTC_DICT_STASH and
// MTC_DRIVER_WARMUP.
TEST(WorkerPoolSet, SwitchVariablesAreZeroOrOne) {
  for (const char* variable :
       {kWorkerAnticipateVariable, kDictStashVariable, kDriverWarmupVariable}) {
    SCOPED_TRACE(variable);
    EXPECT_TRUE(parse_switch(variable, nullptr, true));
    EXPECT_TRUE(parse_switch(variable, "", true));
    EXPECT_FALSE(parse_switch(variable, "", false));
    EXPECT_FALSE(parse_switch(variable, "0", true));
    EXPECT_TRUE(parse_switch(variable, "1", false));
    for (const char* bad : {"2", "-1", "yes", "on", " 1", "01x"}) {
      SCOPED_TRACE(bad);
      try {
        parse_switch(variable, bad, true);
        ADD_FAILURE() << "accepted";
      } catch (const c10::Error& e) {
        EXPECT_NE(std::string(e.what()).find(std::string(variable) + "='" + bad + "'"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(WorkerPoolSet, MakesAPoolForEachDeviceOnFirstUse) {
  WorkerPoolSet pools(WorkerCount{.per_device = 2, .hardware_threads = 64}, kSpin);
  EXPECT_EQ(pools.pools(), 0);
  WorkerPool& zero = pools.for_device(0);
  EXPECT_EQ(zero.size(), 2);
  EXPECT_EQ(&pools.for_device(0), &zero);
  WorkerPool& three = pools.for_device(3);
  WorkerPool& last = pools.for_device(WorkerPoolSet::kMaxDevices - 1);
  WorkerPool& none = pools.for_device(-1);
  EXPECT_NE(&three, &zero);
  EXPECT_NE(&last, &three);
  EXPECT_NE(&none, &zero);
  EXPECT_NE(&none, &last);
  // Not a device index: the pool of copies without a device.
  EXPECT_EQ(&pools.for_device(WorkerPoolSet::kMaxDevices), &none);
  EXPECT_EQ(pools.pools(), 4);
  EXPECT_EQ(pools.threads(), 8);
  expect_concurrent_workers(three, 2);
}

TEST(WorkerPoolSet, AFixedCountIsOnePoolForEveryDevice) {
  WorkerPoolSet pools(WorkerCount{.fixed = 3, .hardware_threads = 64}, kSpin);
  WorkerPool& shared = pools.for_device(-1);
  for (int d = 0; d < 8; ++d) EXPECT_EQ(&pools.for_device(d), &shared) << d;
  EXPECT_EQ(pools.pools(), 1);
  EXPECT_EQ(pools.threads(), 3);
  expect_concurrent_workers(shared, 3);
}

TEST(WorkerPoolSet, OnePoolForAllServesEveryDeviceWithAllTheirWorkersWhileOn) {
  WorkerPoolSet pools(WorkerCount{.per_device = 2, .hardware_threads = 64, .devices = 3}, kSpin);
  WorkerPool& zero = pools.for_device(0);
  pools.set_one_pool_for_all(true);
  WorkerPool& all = pools.for_device(0);
  EXPECT_NE(&all, &zero);
  EXPECT_EQ(all.size(), 6);
  EXPECT_EQ(&pools.for_device(2), &all);
  EXPECT_EQ(&pools.for_device(-1), &all);
  pools.set_one_pool_for_all(false);
  EXPECT_EQ(&pools.for_device(0), &zero);
  EXPECT_NE(&pools.for_device(2), &all);
  pools.set_one_pool_for_all(true);
  EXPECT_EQ(&pools.for_device(1), &all) << "made once, kept";
  EXPECT_EQ(pools.threads(), 2 + 2 + 6);
}

TEST(WorkerPoolSet, ConcurrentFirstUsesMakeOnePoolPerDevice) {
  WorkerPoolSet pools(WorkerCount{.per_device = 1, .hardware_threads = 64}, kSpin);
  std::vector<std::vector<WorkerPool*>> seen(8, std::vector<WorkerPool*>(8));
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&pools, &seen, t] {
      for (int k = 0; k < 100; ++k) {
        const int d = (t + k) % 8;
        WorkerPool* pool = &pools.for_device(d);
        if (k < 8) seen[static_cast<size_t>(t)][static_cast<size_t>(d)] = pool;
      }
    });
  }
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(pools.pools(), 8);
  EXPECT_EQ(pools.threads(), 8);
  for (int t = 0; t < 8; ++t)
    for (int d = 0; d < 8; ++d) EXPECT_EQ(seen[t][d], &pools.for_device(d)) << t << " " << d;
}

TEST(PoolScope, NamesThePoolOfTheThreadsWorkAndRestoresTheOneBefore) {
  WorkerPool& outside = current_worker_pool();
  WorkerPool a(1, kSpin);
  WorkerPool b(1, kSpin);
  {
    const PoolScope in_a(a);
    EXPECT_EQ(&current_worker_pool(), &a);
    {
      const PoolScope in_b(b);
      EXPECT_EQ(&current_worker_pool(), &b);
    }
    EXPECT_EQ(&current_worker_pool(), &a);
  }
  EXPECT_EQ(&current_worker_pool(), &outside);
  EXPECT_EQ(&outside, &worker_pool_for(c10::Device(c10::kCPU)));
}

// Each pool's work takes TensorImpl blocks from the pool's own shard (impl_pool.h); the thread's
// shard before comes back with the scope's end.
TEST(PoolScope, GivesTheThreadItsPoolsShardOfTheTensorImplPool) {
  WorkerPool a(1, kSpin);
  WorkerPool b(1, kSpin);
  EXPECT_NE(a.id(), b.id());
  EXPECT_NE(impl_pool::shard_of_pool(a.id()), impl_pool::shard_of_pool(b.id()));
  // Shard 0 is no pool's, so each scope below changes the thread's shard.
  const size_t outside = impl_pool::set_thread_shard(0);
  {
    const PoolScope in_a(a);
    EXPECT_EQ(impl_pool::thread_shard(), impl_pool::shard_of_pool(a.id()));
    {
      const PoolScope in_b(b);
      EXPECT_EQ(impl_pool::thread_shard(), impl_pool::shard_of_pool(b.id()));
    }
    EXPECT_EQ(impl_pool::thread_shard(), impl_pool::shard_of_pool(a.id()));
  }
  EXPECT_EQ(impl_pool::thread_shard(), 0U);
  impl_pool::set_thread_shard(outside);
}

TEST(PoolScope, AWorkersTasksRunInItsOwnPool) {
  WorkerPool pool(2, kSpin);
  std::atomic<WorkerPool*> seen{nullptr};
  pool.submit([&seen] { seen.store(&current_worker_pool()); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (seen.load() == nullptr && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(seen.load(), &pool);
}

TEST(WorkerPoolSet, WorkerCountVariableParsesCounts) {
  EXPECT_EQ(parse_worker_threads(nullptr, 4), 4);
  EXPECT_EQ(parse_worker_threads("", 3), 3);
  EXPECT_EQ(parse_worker_threads("1", 4), 1);
  EXPECT_EQ(parse_worker_threads("12", 4), 12);
  EXPECT_EQ(parse_worker_threads("256", 4), 256);
}

TEST(WorkerPoolSet, SpinVariableParsesMicroseconds) {
  using std::chrono::microseconds;
  EXPECT_EQ(parse_worker_spin(nullptr, microseconds(200)), microseconds(200));
  EXPECT_EQ(parse_worker_spin("", microseconds(200)), microseconds(200));
  EXPECT_EQ(parse_worker_spin("0", microseconds(200)), microseconds(0));
  EXPECT_EQ(parse_worker_spin("2000", microseconds(200)), microseconds(2000));
  EXPECT_EQ(parse_worker_spin("1000000", microseconds(200)), microseconds(kMaxWorkerSpinUs));
}

TEST(WorkerPoolSet, SpinVariableRejectsAnythingElseNamingIt) {
  for (const char* bad : {"1000001", "-1", "2ms", " 5", "1e3", "99999999999"}) {
    SCOPED_TRACE(bad);
    try {
      parse_worker_spin(bad, std::chrono::microseconds(200));
      ADD_FAILURE() << "accepted";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(kWorkerSpinVariable) + "='" + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(WorkerPoolSet, WorkerCountVariableRejectsAnythingElseNamingIt) {
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
