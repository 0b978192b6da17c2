// Holds every worker of a pool busy, so that a test can tell which thread takes up a copy: with
// all of a pool's workers blocked, nothing of that pool starts a queued job; the caller's get()
// runs it, or a worker of another pool does.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "detail/worker_pool.h"

namespace mtc::test {

class PoolBlocker {
 public:
  // Blocks each of `pool`'s workers but `left_free` of them, then queues `queued_behind` more
  // blocking tasks behind them (work queued ahead of whatever the test submits next).
  explicit PoolBlocker(mtc::detail::WorkerPool& pool, int queued_behind = 0, int left_free = 0)
      : tasks_(pool.size() - left_free + queued_behind) {
    const int blocked = pool.size() - left_free;
    for (int w = 0; w < blocked; ++w) pool.submit([this] { block(); });
    while (blocked_.load() < blocked) std::this_thread::sleep_for(std::chrono::microseconds(50));
    for (int k = 0; k < queued_behind; ++k) pool.submit([this] { block(); });
  }
  PoolBlocker(const PoolBlocker&) = delete;  // its tasks point at it
  PoolBlocker& operator=(const PoolBlocker&) = delete;
  // Lets every blocking task finish, the queued ones too, and waits for them: the tasks use this
  // object to the end.
  ~PoolBlocker() { release(); }

  void release() {
    release_.store(true);
    while (finished_.load() < tasks_) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }

 private:
  void block() {
    blocked_.fetch_add(1);
    while (!release_.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    finished_.fetch_add(1);
  }

  const int tasks_;
  std::atomic<bool> release_{false};
  std::atomic<int> blocked_{0};
  std::atomic<int> finished_{0};
};

}  // namespace mtc::test
