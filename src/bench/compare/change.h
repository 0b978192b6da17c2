// The change of one metric between a baseline and a candidate, with its interval, and the
// verdict it earns against a threshold. Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "compare/report_cases.h"

namespace mtc::bench::compare {

// What is compared: the absolute wall time, and two same-run ratios, which travel between
// machines better than either time: the speedup over `to` (measured paired per round by the
// run) and the speedup over `memcpy_batch` (the ratio of the two medians of one run; compare
// computes it, for a stored baseline only).
enum class Metric { kWall, kSpeedup, kOverMemcpyBatch };
inline constexpr Metric kAllMetrics[] = {Metric::kWall, Metric::kSpeedup, Metric::kOverMemcpyBatch};
std::string_view to_string(Metric metric);  // "wall", "speedup", "over_memcpy_batch"
// For the wall time a larger candidate is worse; for a ratio it is better.
bool larger_is_better(Metric metric);

enum class Verdict { kSame, kFaster, kSlower, kUnsure };
std::string_view to_string(Verdict verdict);

// Fewer rounds than this (paired rounds, or rounds of either side) give UNSURE whatever the
// interval says: with two, the t-interval rests on one degree of freedom and a single
// estimate of the spread, too little to trust the spread itself.
inline constexpr int64_t kMinRounds = 3;

// candidate / baseline, as a ratio, with its interval at `level`.
struct Change {
  double ratio = 1.0;
  double low = 0.0;
  double high = std::numeric_limits<double>::infinity();  // +inf when nothing bounds it
  double level = 0.95;
  int64_t rounds = 0;
};

// Paired rounds of one A/B job: baseline[r] and candidate[r] were measured in the same round,
// back to back, so the host's state of that moment cancels in their ratio. The change is the
// geometric mean of the per-round ratios; its interval the t-interval of the mean log ratio
// (n - 1 degrees of freedom). Values <= 0 are not allowed (the reader rejects them).
Change paired_change(std::span<const double> baseline, std::span<const double> candidate,
                     double level);

// paired_change, when the rounds come from several processes (`process[r]` names round r's):
// each process draws its own code layout and thread placement, which can favour one build by a
// percent or two for the whole process (seen between identical builds on an H100 host), so
// rounds of one process are not independent draws. The interval's half-width (in logs) is the
// larger of the rounds' t-interval and the t-interval of the per-process mean log ratios (P - 1
// degrees of freedom). `processes` holds the number of distinct processes.
struct ClusteredChange {
  Change change;
  int64_t processes = 0;
};
ClusteredChange clustered_paired_change(std::span<const double> baseline,
                                        std::span<const double> candidate,
                                        std::span<const int64_t> process, double level);
// The same from the per-round log ratios ln(candidate / baseline) themselves, however each
// round's ratio was estimated (e.g. the median of its per-step ratios: PairedSteps).
ClusteredChange clustered_log_change(std::span<const double> log_ratios,
                                     std::span<const int64_t> process, double level);

// Two independent runs: the ratio of their medians. Each run's interval is turned into log
// half-widths (below: ln(value / low), above: ln(high / value)); the ratio's log interval adds
// the candidate's and the baseline's opposite half-widths in quadrature:
//   low  = ln r - sqrt(below_c^2 + above_b^2),   high = ln r + sqrt(above_c^2 + below_b^2).
// For independent, roughly normal log medians at one level this is the interval of their
// difference at that level. An unbounded side gives an unbounded change. Both intervals must
// have the same level (throws UsageError otherwise).
Change unpaired_change(const Estimate& baseline, const Estimate& candidate);

// SAME when the whole interval lies within the band [1 / (1 + threshold), 1 + threshold] (a
// symmetric band in log space), SLOWER or FASTER when it lies wholly beyond one edge, UNSURE
// when it straddles an edge or rests on fewer than kMinRounds rounds.
Verdict judge(const Change& change, double threshold, Metric metric);

}  // namespace mtc::bench::compare
