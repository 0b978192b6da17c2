// What `mtc-bench compare` was asked for, typed and validated (the CLI parses into this).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "compare/change.h"

namespace mtc::bench::compare {

// Which verdicts make the command exit with 1.
enum class FailOn { kSlower, kFaster, kAny, kNone };

// What the baseline is. kAuto: the reports say (an A/B job pairs by round; reports from
// other days or hosts are a stored baseline; otherwise a fresh one).
enum class BaselineKind { kAuto, kFresh, kStored };

// A fresh baseline (the same job, host and day) is a strong reference. A stored one from another
// day or host is compared on same-run ratios only (hosts of the fleet differ by 10-100 % in
// absolute times between runs of one build), each with a threshold taken from how far that ratio
// moved between hosts of one kind for one build: up to 1.30x for the speedup over `to` and 1.54x
// over `memcpy_batch`, in 20 default runs on two H200 hosts (results/baselines/README.md).
inline constexpr double kDefaultThreshold = 0.05;
inline constexpr double kStoredSpeedupThreshold = 0.30;
inline constexpr double kStoredOverMemcpyBatchThreshold = 0.55;
// Two builds measured sample by sample in one process (in_process.h) see the same host: their
// per-round ratio moves far less than two processes' medians, so a smaller change is a finding.
inline constexpr double kInProcessThreshold = 0.02;
// The level of the paired t-interval (an unpaired change takes the reports' level).
inline constexpr double kPairedLevel = 0.95;

struct CompareOptions {
  std::string baseline;             // a report or a folder of reports
  std::string candidate;            // empty: `baseline` holds in-process A/B runs (in_process.h)
  std::optional<double> threshold;  // --threshold: every metric
  std::map<Metric, double> metric_thresholds;  // --threshold-metric: wins over --threshold
  FailOn fail_on = FailOn::kSlower;
  BaselineKind baseline_kind = BaselineKind::kAuto;
  bool ignore_device = false;
  std::string md_path;
  std::string json_path;
};

std::string_view to_string(FailOn fail_on);
std::string_view to_string(BaselineKind kind);

// Parsers of the command line's text; each throws UsageError naming the bad text.
FailOn parse_fail_on(const std::string& text);              // slower|faster|any|none
BaselineKind parse_baseline_kind(const std::string& text);  // auto|fresh|stored
// A threshold in percent: "5" or "5%" is 0.05. Must be > 0 and < 1000.
double parse_threshold_percent(const std::string& text);
// "wall=5,speedup=10" -> {wall: 0.05, speedup: 0.10}.
std::map<Metric, double> parse_metric_thresholds(const std::string& text);

}  // namespace mtc::bench::compare
