// A deadline for a stretch of test code that could hang (a copy that never completes, a worker
// pool stuck behind a failed copy): past it, the process says what was running and aborts, so a
// deadlock fails the run with a message instead of stalling it until an outer timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace mtc::test {

class Watchdog {
 public:
  // `state` (optional) is printed beside `what` when the deadline passes: progress counters,
  // say, to tell a slow run from a stuck one.
  Watchdog(std::chrono::seconds limit, std::string what, std::function<std::string()> state = {})
      : thread_([this, limit, what = std::move(what), state = std::move(state)] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (done_cv_.wait_for(lock, limit, [this] { return done_; })) return;
          std::fprintf(stderr, "\nwatchdog: %s still running after %lld s: deadlock? %s\n",
                       what.c_str(), static_cast<long long>(limit.count()),
                       state ? state().c_str() : "");
          std::fflush(stderr);
          std::abort();
        }) {}
  Watchdog(const Watchdog&) = delete;  // owns a thread that refers to this object
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace mtc::test
