#include "detail/arrival_forecast.h"

#include <algorithm>

namespace mtc::detail {

void ArrivalForecast::record(Clock::time_point now, int64_t tasks, bool starts_copy) {
  const bool new_burst = bursts_ == 0 || (starts_copy && now - last_copy_ > kBurstGap);
  if (starts_copy) last_copy_ = now;
  if (!new_burst) {
    burst_tasks_ += tasks;
    return;
  }
  burst_tasks_ = tasks;
  if (bursts_ > 0) {
    intervals_[static_cast<size_t>(next_slot_)] = now - burst_start_;
    next_slot_ = (next_slot_ + 1) % kHistory;
    intervals_kept_ = std::min(intervals_kept_ + 1, kHistory);
  }
  burst_start_ = now;
  ++bursts_;
}

std::optional<ArrivalForecast::Window> ArrivalForecast::next() const {
  if (intervals_kept_ < kMinHistory) return std::nullopt;
  const auto first = intervals_.begin();
  const auto [shortest, longest] = std::minmax_element(first, first + intervals_kept_);
  if (*longest - *shortest > kMaxSpread || *longest > kMaxInterval) return std::nullopt;
  return Window{burst_start_ + *shortest - kLead, burst_start_ + *longest + kSlack, bursts_,
                burst_tasks_};
}

}  // namespace mtc::detail
