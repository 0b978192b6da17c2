// Statistics of a case measured in rounds: the interval of its median that includes the
// variation between rounds (and between processes), and speedups paired within rounds.
//
// Why rounds: samples taken back to back share the host's state at that moment (which cores
// the threads run on, clock, other tenants), so their spread says how well *this moment's*
// median is known, not what the next run will see. Rounds spread over the run, interleaved
// with the other strategies, sample that state several times; the spread of the round medians
// is the honest measure of repeatability. Pure functions, no ATen.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace mtc::bench {

inline constexpr double kDefaultIntervalLevel = 0.95;

struct Interval {
  double low = 0.0;
  double high = 0.0;
  double level = kDefaultIntervalLevel;
};

// One round's samples, and which process measured it (0 unless several processes ran).
struct Round {
  std::vector<double> samples;
  int process = 0;
};

struct RoundsSummary {
  int64_t rounds = 0;
  std::vector<double> medians;   // per round
  std::vector<int64_t> samples;  // per round
  std::vector<int> process;      // per round
  double median = 0.0;           // over all samples pooled
  // Relative standard errors of the median:
  double within = 0.0;   // from the samples' spread alone (what v1 reports called noise)
  double between = 0.0;  // from the spread of the round (and process) medians
  double reported() const { return within > between ? within : between; }
  // For the pooled median, at `level`. It is median * exp(+-h) with h the largest of:
  //   t(R-1) * sd(log round medians) / sqrt(R)   variation between rounds;
  //   t(P-1) * sd(log process means) / sqrt(P)   variation between processes (P > 1);
  //   z * within                                 sampling, a floor when rounds happen to agree.
  // The first two hold when rounds (processes) are independent draws of the host's state;
  // rounds inside one process may share that process's state, which is why the second exists.
  // With a single round nothing is known of the variation between rounds: the interval is
  // then [0, +inf) (high is written as null in JSON), which a compare reads as "unsure".
  Interval interval;
};

RoundsSummary summarize_rounds(std::span<const Round> rounds, double level = kDefaultIntervalLevel);

// A ratio estimated from paired rounds: round r gives numerator[r] / denominator[r]; the
// estimate is their geometric mean and the interval a t-interval on the log ratios. Needs at
// least two pairs for an interval (low and high are then null); round medians of 0 are skipped.
struct RatioEstimate {
  double estimate = 0.0;
  std::optional<double> low;
  std::optional<double> high;
  double level = kDefaultIntervalLevel;
  int64_t pairs = 0;
};

std::optional<RatioEstimate> paired_ratio(std::span<const double> numerator,
                                          std::span<const double> denominator,
                                          double level = kDefaultIntervalLevel);

// The relative half-width h of a t-interval for the mean of `logs`: t(n-1) * sd / sqrt(n).
// +inf for fewer than two values.
double log_half_width(std::span<const double> logs, double level);

}  // namespace mtc::bench
