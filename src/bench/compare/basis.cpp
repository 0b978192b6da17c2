#include "compare/basis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "errors.h"
#include "shown.h"

namespace mtc::bench::compare {
namespace {

std::set<std::string> device_models(const std::vector<ReportCases>& reports) {
  std::set<std::string> models;
  for (const ReportCases& r : reports) {
    for (const CaseRecord& c : r.cases) models.insert(c.key.device_model);
  }
  return models;
}

template <typename Member>
std::set<std::string> collect(const std::vector<ReportCases>& reports, Member member) {
  std::set<std::string> values;
  for (const ReportCases& r : reports) values.insert(r.*member);
  return values;
}

double default_threshold(Metric metric, BaselineKind basis) {
  if (basis != BaselineKind::kStored) return kDefaultThreshold;
  return metric == Metric::kOverMemcpyBatch ? kStoredOverMemcpyBatchThreshold
                                            : kStoredSpeedupThreshold;
}

}  // namespace

void check_devices(const std::vector<ReportCases>& baseline,
                   const std::vector<ReportCases>& candidate, const CompareOptions& options,
                   std::vector<std::string>& notes) {
  const auto base = device_models(baseline);
  const auto cand = device_models(candidate);
  if (base == cand) return;
  const std::string what = fmt::format("the baseline was measured on {} and the candidate on {}",
                                       shown_list(base), shown_list(cand));
  if (!options.ignore_device) {
    throw UsageError(
        what + ": times do not carry between devices (give --ignore-device to compare anyway)");
  }
  notes.push_back(what + "; compared anyway (--ignore-device)");
}

// The job's name when both sides are the two sides of one A/B job, else empty.
std::string paired_job(const std::vector<ReportCases>& baseline,
                       const std::vector<ReportCases>& candidate) {
  std::set<std::string> jobs;
  std::set<std::string> base_sides;
  std::set<std::string> cand_sides;
  for (const auto* side : {&baseline, &candidate}) {
    for (const ReportCases& r : *side) {
      if (!r.ab) return "";
      jobs.insert(r.ab->job);
      (side == &baseline ? base_sides : cand_sides).insert(r.ab->side);
    }
  }
  if (jobs.size() != 1) return "";
  const std::string& job = *jobs.begin();
  if (base_sides.size() != 1 || cand_sides.size() != 1) {
    throw UsageError(
        fmt::format("A/B job {}: each input must hold one side (baseline has {}; candidate has {})",
                    shown(job), shown_list(base_sides), shown_list(cand_sides)));
  }
  if (base_sides == cand_sides) {
    throw UsageError(fmt::format("A/B job {}: both inputs are its `{}` side", shown(job),
                                 shown(*base_sides.begin())));
  }
  return job;
}

BaselineKind resolve_basis(const CompareOptions& options, bool paired,
                           const std::vector<ReportCases>& baseline,
                           const std::vector<ReportCases>& candidate,
                           std::vector<std::string>& notes) {
  if (options.baseline_kind != BaselineKind::kAuto) return options.baseline_kind;
  if (paired) return BaselineKind::kFresh;
  std::vector<std::string> differ;
  const auto base_hosts = collect(baseline, &ReportCases::host);
  const auto cand_hosts = collect(candidate, &ReportCases::host);
  const auto base_days = collect(baseline, &ReportCases::day);
  const auto cand_days = collect(candidate, &ReportCases::day);
  if (base_hosts != cand_hosts) {
    differ.push_back(fmt::format("hosts {} vs {}", shown_list(base_hosts), shown_list(cand_hosts)));
  }
  if (base_days != cand_days) {
    differ.push_back(fmt::format("days {} vs {}", shown_list(base_days), shown_list(cand_days)));
  }
  if (differ.empty()) return BaselineKind::kFresh;
  notes.push_back(
      fmt::format("stored baseline detected ({}): not one A/B job", fmt::join(differ, "; ")));
  return BaselineKind::kStored;
}

std::vector<Metric> judged_metrics(BaselineKind basis) {
  if (basis == BaselineKind::kStored) return {Metric::kSpeedup, Metric::kOverMemcpyBatch};
  return {Metric::kWall, Metric::kSpeedup};
}

std::map<Metric, double> resolve_thresholds(const CompareOptions& options, BaselineKind basis,
                                            std::vector<std::string>& notes) {
  std::map<Metric, double> thresholds;
  std::vector<std::string> parts;
  bool defaulted = false;
  const std::vector<Metric> judged = judged_metrics(basis);
  // A threshold of a metric this basis does not judge is refused where --baseline-kind chose the
  // basis, and said where the reports did (a job's one command line may serve both kinds).
  for (const auto& [metric, threshold] : options.metric_thresholds) {
    if (std::find(judged.begin(), judged.end(), metric) != judged.end()) continue;
    std::vector<std::string_view> names;
    for (Metric m : judged) names.push_back(to_string(m));
    const std::string why = fmt::format(
        "--threshold-metric {}: not judged against a {} baseline, which is judged on "
        "{}",
        to_string(metric), to_string(basis), fmt::join(names, " and "));
    if (options.baseline_kind != BaselineKind::kAuto) throw UsageError(why);
    notes.push_back(why + "; it is not used");
  }
  for (Metric m : judged) {
    const auto given = options.metric_thresholds.find(m);
    if (given != options.metric_thresholds.end()) {
      thresholds[m] = given->second;
    } else {
      thresholds[m] = options.threshold.value_or(default_threshold(m, basis));
      defaulted = defaulted || !options.threshold;
    }
    parts.push_back(fmt::format("{} {:g} %", to_string(m), thresholds[m] * 100.0));
  }
  std::string note = fmt::format("thresholds: {}", fmt::join(parts, ", "));
  if (basis == BaselineKind::kStored) {
    note +=
        " (a stored baseline from another day or host: compared on same-run ratios only, the "
        "speedup over `to` and over `memcpy_batch`; absolute times are not compared";
    if (defaulted) note += "; the default thresholds are the ratios' measured spread between hosts";
    note += ")";
  }
  notes.push_back(note);
  return thresholds;
}

}  // namespace mtc::bench::compare
