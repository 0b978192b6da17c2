// Compares two builds of the engine measured in one process, sample by sample: the strategy
// `VARIANT@base` (the baseline build, loaded with --engine-lib base=PATH) against `VARIANT@cand`
// (the candidate loaded the same way) or, without one, `VARIANT` (the program's own build), in
// the same run, device, direction and pattern. Their rounds were taken together, so round r of
// one pairs with round r of the other and the host's state of that moment cancels in their
// ratio. A round's ratio is the median of its per-step log ratios (paired_steps: each step times
// both builds back to back, so they share the host's moment more closely than the two round
// medians do; with --round-cpus 4 as well, the intervals of an H100 host's A/A jobs narrowed by
// a third to a half: results/NOTES.md), or for a report
// without them the ratio of the two round medians. The change is the geometric mean of the
// per-round ratios with a Student-t interval over the rounds, widened to the t-interval over the
// processes when several measured it (change.h, clustered_log_change): each process draws its
// own code layout and thread placement. Rounds of several reports (processes) of one case are
// pooled. Only the wall time is compared: it already is a ratio measured together.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compare/comparison.h"

namespace mtc::bench::compare {

// The strategies `VARIANT@base` (the baseline build) pairs with, preferred first: `VARIANT@cand`
// (the candidate loaded as a library too) and `VARIANT` (the program's own engine); empty for any
// other name. The runner pairs its rounds by this rule and compare its rows. Loading both sides
// makes the two differ in nothing but their code: a linked engine and a loaded identical one
// differ in how they are linked (thread-local storage, for one), ~2 % on an H100 host
// (results/NOTES.md).
std::vector<std::string> ab_partners(std::string_view baseline_strategy);

// Throws UsageError when no report holds an A/B pair, a case appears twice in one report, or
// the options ask for what this comparison does not do (--baseline-kind stored, a threshold of
// a metric other than the wall time).
Comparison compare_in_process(const std::vector<ReportCases>& reports,
                              const CompareOptions& options);

}  // namespace mtc::bench::compare
