// When a worker pool's next copy is due, from when its last ones came.
//
// A training loop copies one batch per step, after milliseconds of other work: long enough for
// the pool's workers to stop spinning and sleep. The copy then waits for one of them to wake
// (61 us of a 345 us step on an H200 host, results/NOTES.md 2026-11-26), and its walk waits again
// for each helper. Such a loop is regular, so the pool can tell when the next copy will come and
// have its workers awake and spinning shortly before. A loop whose copies come irregularly gets
// no forecast, and its workers sleep as before: a wrong forecast only costs a short spin.
//
// Tasks are grouped into bursts: a copy's first task starts a burst unless it came within
// kBurstGap of the previous copy's (a hot loop, or several threads copying at once), and the
// tasks a copy queues later (its walk's helpers, its output parts) join the burst however late
// they come: a large GPU->CPU copy places its outputs milliseconds after it started, and a burst
// of their own would make a regular loop look irregular. The forecast looks at the intervals
// between the last kHistory bursts' starts. Pure: the caller gives the time and keeps it
// consistent (the worker pool holds its lock).
//
// Copies less than kBurstGap apart get no forecast. Forecasting them was measured (a 200 us gap
// between copies, a little longer than a worker's spin, as in a tight loop in Python): 0.92-0.97x
// after a sleeping gap, 1.04-1.07x after a busy one, three runs on one H100 host, 2026-11-26.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

namespace mtc::detail {

class ArrivalForecast {
 public:
  using Clock = std::chrono::steady_clock;

  // A copy that starts this long after the previous one starts a new burst.
  static constexpr std::chrono::microseconds kBurstGap{500};
  // Intervals kept, and how many are needed before a forecast is made.
  static constexpr int kHistory = 8;
  static constexpr int kMinHistory = 4;
  // Workers wake this long before the earliest the next burst came after the last one (covers
  // a sleeping thread's wake-up, 15-60 us on a shared host, with room to spare) ...
  static constexpr std::chrono::microseconds kLead{200};
  // ... and give up spinning this long after the latest it came.
  static constexpr std::chrono::microseconds kSlack{150};
  // Bursts whose intervals differ by more than this are not regular enough: the spin of one
  // forecast would last longer than kLead + kMaxSpread + kSlack (850 us).
  static constexpr std::chrono::microseconds kMaxSpread{500};
  // Only intervals up to this are forecast.
  static constexpr std::chrono::seconds kMaxInterval{1};
  // Bursts start more than kBurstGap apart, so a window never opens before the last burst began.
  static_assert(kBurstGap > kLead);

  // When workers should be awake for the next burst.
  struct Window {
    Clock::time_point wake_at;
    Clock::time_point spin_until;
    int64_t burst;  // numbers the last burst: one forecast per burst
    int64_t tasks;  // queued in the last burst: how many workers the next one may want
  };

  // `tasks` tasks were queued at `now` (not earlier than the previous call's): a copy's first
  // (`starts_copy`), or more of the copy under way (helpers, parts).
  void record(Clock::time_point now, int64_t tasks = 1, bool starts_copy = true);
  // The window of the next burst, when the last kHistory (at least kMinHistory) bursts came at
  // regular intervals; otherwise none.
  std::optional<Window> next() const;
  // Bursts seen so far (the first task counts as one).
  int64_t bursts() const { return bursts_; }

 private:
  std::array<Clock::duration, kHistory> intervals_{};
  int intervals_kept_ = 0;
  int next_slot_ = 0;
  Clock::time_point last_copy_{};
  Clock::time_point burst_start_{};
  int64_t bursts_ = 0;
  int64_t burst_tasks_ = 0;
};

}  // namespace mtc::detail
