// What a comparison rests on, decided before any case is judged: whether both sides were
// measured on one GPU model, whether they are the two sides of one A/B job, whether the baseline
// is fresh or stored, which metrics are judged and at which thresholds. Pure (no ATen).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compare/change.h"
#include "compare/compare_options.h"
#include "compare/report_cases.h"

namespace mtc::bench::compare {

// Throws UsageError when the sides were measured on different GPU models, unless
// options.ignore_device (then a note says so).
void check_devices(const std::vector<ReportCases>& baseline,
                   const std::vector<ReportCases>& candidate, const CompareOptions& options,
                   std::vector<std::string>& notes);

// The job's name when both sides are the two sides of one A/B job, else empty. Throws
// UsageError when an input holds both sides, or both inputs are the same side.
std::string paired_job(const std::vector<ReportCases>& baseline,
                       const std::vector<ReportCases>& candidate);

// kFresh or kStored: as the options say, else fresh for an A/B job or for reports of one host
// and day, stored otherwise (with a note naming what differs).
BaselineKind resolve_basis(const CompareOptions& options, bool paired,
                           const std::vector<ReportCases>& baseline,
                           const std::vector<ReportCases>& candidate,
                           std::vector<std::string>& notes);

// What is judged: a fresh baseline's wall time and speedup over `to`; a stored baseline's
// same-run ratios only, since its absolute times belong to another host.
std::vector<Metric> judged_metrics(BaselineKind basis);

// The threshold of each judged metric (--threshold-metric, else --threshold, else the basis'
// default), with a note naming them.
std::map<Metric, double> resolve_thresholds(const CompareOptions& options, BaselineKind basis,
                                            std::vector<std::string>& notes);

}  // namespace mtc::bench::compare
