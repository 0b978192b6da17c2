// mtc::RootFeed: a root whose elements arrive while its copy runs (mtc/copier.h).
#include <c10/util/Exception.h>

#include <chrono>
#include <utility>

#include "detail/worker_pool.h"
#include "mtc/copier.h"

namespace mtc {
namespace {
// The steady clock's time as RootFeed::completed_at_ stores it.
std::chrono::steady_clock::rep clock_ticks() {
  return std::chrono::steady_clock::now().time_since_epoch().count();
}
// Spins before a waiting thread sleeps: the binding puts an element every few microseconds.
constexpr int kSpins = 256;
}  // namespace

RootFeed::RootFeed(int64_t elements) : size_(elements) {
  TORCH_CHECK_VALUE(elements >= 0, "mtc::RootFeed: a negative number of elements: ", elements);
  list_.resize(static_cast<size_t>(elements));
  root_ = list_;
  // A root without elements is complete at once.
  if (elements == 0) completed_at_.store(clock_ticks(), std::memory_order_relaxed);
}

RootFeed::RootFeed(int64_t elements, Producer produce) : RootFeed(elements) {
  TORCH_CHECK_VALUE(produce != nullptr, "mtc::RootFeed: the producer is empty");
  slots_ = std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(elements));
  for (int64_t i = 0; i < elements; ++i) slots_[i].store(kOpen, std::memory_order_relaxed);
  produce_ = std::move(produce);
}

void RootFeed::arrive(int64_t i, c10::IValue element) {
  // The copy's threads read an element only once the count (or its slot) says it is there; no
  // other slot changes meanwhile, and the list itself never grows.
  list_.set(static_cast<size_t>(i), std::move(element));
  const bool last = (state_.load(std::memory_order_relaxed) & kCount) + 1 == size_;
  // Read by the copy once its walk is over, after the count: stored before it. Out of order, two
  // last puts may both store it; either time is when the last one came, within their race.
  if (last) completed_at_.store(clock_ticks(), std::memory_order_release);
  if (slots_) slots_[i].store(kArrived, std::memory_order_release);
  state_.fetch_add(1, std::memory_order_release);
  state_.notify_all();  // no system call unless a thread sleeps in wait_for()
}

void RootFeed::put(c10::IValue element) {
  TORCH_CHECK(!slots_, "mtc::RootFeed::put: a feed with a producer takes put_at()");
  const int64_t state = state_.load(std::memory_order_relaxed);
  const int64_t i = state & kCount;
  TORCH_CHECK((state & kAbandoned) == 0 && i < size_, "mtc::RootFeed::put: element ", i, " of ",
              size_, (state & kAbandoned) != 0 ? " after abandon()" : " is one too many");
  arrive(i, std::move(element));
}

bool RootFeed::claim(int64_t i) {
  if (!slots_ || i < 0 || i >= size_) return false;
  // Every attempt is counted before it is made, and settled at once when it fails: wait_settled()
  // never misses a claim that succeeds.
  claims_.fetch_add(1, std::memory_order_acq_rel);
  uint8_t open = kOpen;
  if (slots_[i].compare_exchange_strong(open, kClaimed, std::memory_order_acq_rel)) return true;
  settled_.fetch_add(1, std::memory_order_release);
  settled_.notify_all();
  return false;
}

void RootFeed::put_at(int64_t i, c10::IValue element) {
  TORCH_CHECK(slots_ && i >= 0 && i < size_, "mtc::RootFeed::put_at: no element ", i,
              slots_ ? " in this feed" : " (the feed has no producer)");
  const uint8_t slot = slots_[i].load(std::memory_order_acquire);
  TORCH_CHECK(slot == kClaimed || slot == kDeclined, "mtc::RootFeed::put_at: element ", i,
              slot == kOpen ? " was not claimed" : " was put already");
  TORCH_CHECK(!abandoned(), "mtc::RootFeed::put_at: element ", i, " after abandon()");
  arrive(i, std::move(element));
  if (slot == kClaimed) {
    settled_.fetch_add(1, std::memory_order_release);
    settled_.notify_all();
  }
}

bool RootFeed::decline(int64_t i) noexcept {
  if (!slots_ || i < 0 || i >= size_) return false;
  uint8_t claimed = kClaimed;
  if (!slots_[i].compare_exchange_strong(claimed, kDeclined, std::memory_order_acq_rel))
    return false;
  settled_.fetch_add(1, std::memory_order_release);
  settled_.notify_all();
  return true;
}

bool RootFeed::declined(int64_t i) const {
  return slots_ && i >= 0 && i < size_ && slots_[i].load(std::memory_order_acquire) == kDeclined;
}

void RootFeed::wait_settled() const {
  for (int spins = 0;; ++spins) {
    const int64_t settled = settled_.load(std::memory_order_acquire);
    if (settled >= claims_.load(std::memory_order_acquire)) return;
    if (spins < kSpins) {
      detail::cpu_relax();
    } else {
      settled_.wait(settled, std::memory_order_acquire);
    }
  }
}

void RootFeed::abandon() noexcept {
  state_.fetch_or(kAbandoned, std::memory_order_acq_rel);
  state_.notify_all();
}

// A thrown error declines the element too: the feeder's own walk of it will say what is wrong.
void RootFeed::make(int64_t i) const {
  bool put = false;
  try {
    put = produce_(i);
  } catch (...) {
  }
  if (put) {
    produced_.fetch_add(1, std::memory_order_relaxed);
  } else if (const_cast<RootFeed&>(*this).decline(i)) {  // unless it was put before it failed
    declines_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool RootFeed::wait_for(int64_t i) const {
  // The binding puts an element every few microseconds: a short spin usually sees it. One that
  // stalls (Python code in its walk), or a machine with fewer cores than threads, gets the
  // waiting threads' cores back while they sleep.
  for (int spins = 0;; ++spins) {
    const int64_t state = state_.load(std::memory_order_acquire);
    if ((state & kAbandoned) != 0) return false;
    if (slots_) {
      if (slots_[i].load(std::memory_order_acquire) == kArrived) return true;
      // Element i first; while another thread makes it, any later one nobody has claimed: the
      // threads make every element they can before they copy any, so the feeder, which claims
      // from the last one back, has as few left as they can leave it.
      bool made = false;
      for (int64_t j = i; j < size_ && !made; ++j) {
        if (slots_[j].load(std::memory_order_relaxed) != kOpen ||
            !const_cast<RootFeed&>(*this).claim(j))
          continue;
        make(j);
        made = true;
      }
      if (made) {
        spins = 0;
        continue;
      }
    } else if ((state & kCount) > i) {
      return true;
    }
    if (spins < kSpins) {
      detail::cpu_relax();
    } else {
      sleeps_.fetch_add(1, std::memory_order_relaxed);
      state_.wait(state, std::memory_order_acquire);
    }
  }
}

}  // namespace mtc
