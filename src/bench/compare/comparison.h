// Matches the cases of two sets of reports and judges each matched case per metric: the core
// of `mtc-bench compare`, independent of how the result is shown.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compare/change.h"
#include "compare/compare_options.h"
#include "compare/report_cases.h"

namespace mtc::bench::compare {

// How the change of a case is computed (change.h): paired by round when both sides are the
// two sides of one A/B job, otherwise the ratio of the medians; in-process (in_process.h) when
// one run measured both builds sample by sample.
enum class Method { kPaired, kUnpaired, kInProcess };
std::string_view to_string(Method method);

struct CaseResult {
  CaseKey key;  // the baseline's key (its device model); in-process: the candidate's
  std::string baseline_strategy;  // in-process only: the strategy of the other build (engine@base)
  std::string candidate_device_model;
  Metric metric = Metric::kWall;
  double baseline = 0.0;  // the baseline's value (paired: the median over its rounds)
  double candidate = 0.0;
  Change change;
  double threshold = 0.0;
  Verdict verdict = Verdict::kUnsure;
  std::string note;  // why UNSURE regardless of the interval, or what is missing
};

// A case measured on one side only, or not measured successfully (skipped, failed).
struct Unmatched {
  CaseKey key;
  std::string side;    // "baseline" or "candidate"
  std::string reason;  // "no match in candidate", "skipped: needs two GPUs", ...
  // The candidate failed (at run time, or its output failed verification) a case the baseline
  // measured: no speed to judge, and worse than any slowdown. Fails the comparison unless
  // --fail-on is none or faster.
  bool broken = false;
};

// Whether a case of this status failed where it ran (not skipped, not measured).
inline bool failed_status(const std::string& status) {
  return status == "failed" || status == "verification_failed";
}

struct Comparison {
  Method method = Method::kUnpaired;
  BaselineKind basis = BaselineKind::kFresh;  // resolved: kFresh or kStored, never kAuto
  std::string ab_job;                         // paired only
  std::map<Metric, double> thresholds;
  std::vector<std::string> notes;  // how it was compared, the threshold's origin, warnings
  std::vector<CaseResult> cases;
  std::vector<Unmatched> unmatched;
  int64_t baseline_reports = 0;
  int64_t candidate_reports = 0;
};

// Throws UsageError when the inputs cannot be compared: different GPU models (unless
// options.ignore_device), one case several times on one side outside an A/B job, both inputs
// the same side of an A/B job, intervals at different levels.
Comparison compare_reports(const std::vector<ReportCases>& baseline,
                           const std::vector<ReportCases>& candidate,
                           const CompareOptions& options);

// The smallest change the comparison could have seen on every case: the largest half-width of
// the cases' intervals, as a fraction (exp of the log half-width, minus 1); +inf when a case's
// interval is unbounded, 0 without cases.
double detectable_change(const Comparison& comparison);

// Whether a verdict is one `--fail-on` fails on.
bool fails_on(Verdict verdict, FailOn fail_on);
// 0 when no case fails, 1 when one does, 2 (bad input) when nothing matched at all.
int exit_code_for(const Comparison& comparison, FailOn fail_on);

}  // namespace mtc::bench::compare
