// Coordinates the threads that measure one case on several GPUs at once: they start sampling
// together and keep sampling until every one of them has met its stopping rule, so each GPU's
// figures are taken under the others' load (the contention of a multi-GPU node).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace mtc::bench {

class MeasureGroup {
 public:
  explicit MeasureGroup(int members) : members_(members) {}
  MeasureGroup(const MeasureGroup&) = delete;  // shared by reference between threads
  MeasureGroup& operator=(const MeasureGroup&) = delete;

  // Blocks until every member arrived or withdrew.
  void arrive_and_wait() {
    std::unique_lock lock(mutex_);
    ++arrived_;
    all_arrived_.notify_all();
    all_arrived_.wait(lock, [this] { return arrived_ >= members_; });
  }
  // A member that will not measure (it failed or was skipped): counts as arrived and done.
  void withdraw() {
    {
      std::lock_guard lock(mutex_);
      ++arrived_;
    }
    all_arrived_.notify_all();
    done_.fetch_add(1);
  }
  // This member's stopping rule fired (or it failed while measuring); call once.
  void mark_done() { done_.fetch_add(1); }
  bool all_done() const { return done_.load() >= members_; }

 private:
  const int members_;
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  int arrived_ = 0;
  std::atomic<int> done_{0};
};

}  // namespace mtc::bench
