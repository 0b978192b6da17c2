#include "compare/in_process.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "errors.h"
#include "shown.h"
#include "stats/summary.h"

namespace mtc::bench::compare {
namespace {

// The two sides' per-round medians of one case, pooled over reports.
struct PairedRounds {
  CaseKey key;  // the candidate's
  std::string baseline_strategy;
  std::vector<double> baseline;
  std::vector<double> candidate;
  std::vector<int64_t> process;    // which process measured each round: (report, process) numbered
  std::vector<double> log_ratios;  // per round: ln(candidate / baseline), from steps where known
  int64_t from_medians = 0;        // rounds whose ratio came from the two round medians
  int64_t skipped = 0;             // rounds without samples on a side
};

// What an in-process comparison cannot honour is refused, not dropped: it judges the wall time
// alone (a ratio of two builds measured together already), of two builds on one host in one run.
void check_options(const CompareOptions& options) {
  if (options.baseline_kind == BaselineKind::kStored) {
    throw UsageError(
        "--baseline-kind stored: one report compares two builds measured together in one run, a "
        "fresh baseline; a stored one is compared with two inputs (compare BASELINE CURRENT)");
  }
  for (const auto& [metric, threshold] : options.metric_thresholds) {
    if (metric != Metric::kWall) {
      throw UsageError(fmt::format(
          "--threshold-metric {}: one report compares two builds on the wall time only (the "
          "ratio of the two, measured together); give wall=PERCENT or --threshold",
          to_string(metric)));
    }
  }
}

double resolve_threshold(const CompareOptions& options, std::vector<std::string>& notes) {
  const auto given = options.metric_thresholds.find(Metric::kWall);
  const double threshold = given != options.metric_thresholds.end()
                               ? given->second
                               : options.threshold.value_or(kInProcessThreshold);
  notes.push_back(fmt::format("threshold: wall {:g} %{}", threshold * 100.0,
                              options.threshold || given != options.metric_thresholds.end()
                                  ? ""
                                  : " (the in-process default: both builds saw the same host)"));
  return threshold;
}

// Adds the pairs of one report to `pairs`; lists a labelled case without its partner.
void collect_pairs(const ReportCases& report, int64_t report_index,
                   std::map<CaseKey, PairedRounds>& pairs, std::vector<CaseKey>& order,
                   std::vector<Unmatched>& unmatched) {
  std::map<CaseKey, const CaseRecord*> by_key;
  std::set<CaseKey> failed;  // the candidate build failing where the baseline ran is a finding
  for (const CaseRecord& c : report.cases) {
    if (failed_status(c.status)) failed.insert(c.key);
    if (c.status != "ok") continue;
    if (!by_key.emplace(c.key, &c).second) {
      throw UsageError(fmt::format("{}: {} appears twice in one report", shown_path(report.path),
                                   case_label(c.key)));
    }
  }
  for (const auto& [key, base] : by_key) {
    const std::vector<std::string> partners = ab_partners(key.strategy);
    if (partners.empty()) continue;
    CaseKey cand_key = key;
    auto partner = by_key.end();
    for (const std::string& name : partners) {
      cand_key.strategy = name;
      partner = by_key.find(cand_key);
      if (partner != by_key.end()) break;
    }
    if (partner == by_key.end()) {
      // The candidate build failed the case: listed as its own, and counted against it.
      bool candidate_failed = false;
      for (const std::string& name : partners) {
        cand_key.strategy = name;
        candidate_failed = failed.contains(cand_key);
        if (candidate_failed) break;
      }
      if (candidate_failed) {
        unmatched.push_back({cand_key, "candidate",
                             fmt::format("failed where `{}` ran in the same run", key.strategy),
                             true});
        continue;
      }
      unmatched.push_back({key, "baseline",
                           fmt::format("no successful `{}` or `{}` in the same run to pair with",
                                       partners[0], partners[1])});
      continue;
    }
    const CaseRecord& cand = *partner->second;
    if (base->round_medians.size() != cand.round_medians.size() ||
        base->round_processes != cand.round_processes) {
      unmatched.push_back(
          {key, "baseline",
           fmt::format("its rounds do not line up with `{}`'s in {} ({} and {})", cand_key.strategy,
                       report.path, base->round_medians.size(), cand.round_medians.size())});
      continue;
    }
    auto [it, inserted] = pairs.try_emplace(cand_key);
    if (inserted) {
      order.push_back(cand_key);
      it->second.key = cand_key;
      it->second.baseline_strategy = key.strategy;
    }
    // The per-step figures hold only against the baseline they were sampled with.
    const bool steps = cand.paired_baseline == key.strategy &&
                       cand.paired_log_ratios.size() == cand.round_medians.size();
    for (size_t r = 0; r < cand.round_medians.size(); ++r) {
      if (base->round_medians[r] > 0.0 && cand.round_medians[r] > 0.0) {
        PairedRounds& p = it->second;
        p.baseline.push_back(base->round_medians[r]);
        p.candidate.push_back(cand.round_medians[r]);
        p.process.push_back(report_index * 1024 + cand.round_processes[r]);
        if (steps && cand.paired_log_ratios[r]) {
          p.log_ratios.push_back(*cand.paired_log_ratios[r]);
        } else {
          p.log_ratios.push_back(std::log(cand.round_medians[r] / base->round_medians[r]));
          ++p.from_medians;
        }
      } else {
        ++it->second.skipped;
      }
    }
  }
}

}  // namespace

std::vector<std::string> ab_partners(std::string_view baseline_strategy) {
  constexpr std::string_view kBaseline = "@base";
  if (baseline_strategy.size() <= kBaseline.size() || !baseline_strategy.ends_with(kBaseline))
    return {};
  const std::string variant(
      baseline_strategy.substr(0, baseline_strategy.size() - kBaseline.size()));
  return {variant + "@cand", variant};
}

Comparison compare_in_process(const std::vector<ReportCases>& reports,
                              const CompareOptions& options) {
  check_options(options);
  Comparison out;
  out.method = Method::kInProcess;
  out.basis = BaselineKind::kFresh;
  out.baseline_reports = static_cast<int64_t>(reports.size());
  out.candidate_reports = static_cast<int64_t>(reports.size());
  out.notes.push_back(
      fmt::format("in-process: each build's rounds paired with the other's in the same run "
                  "(sampled alternately); per round, the median of the per-step log ratios "
                  "of the wall time (each step times both builds back to back; the ratio of "
                  "the round medians for reports without them), t-interval at {:g} % over "
                  "the rounds",
                  kPairedLevel * 100.0));
  const double threshold = resolve_threshold(options, out.notes);
  out.thresholds[Metric::kWall] = threshold;
  std::map<CaseKey, PairedRounds> pairs;
  std::vector<CaseKey> order;
  for (size_t i = 0; i < reports.size(); ++i) {
    const ReportCases& report = reports[i];
    if (report.interrupted)
      out.notes.push_back(fmt::format("{} was interrupted: it holds what finished", report.path));
    collect_pairs(report, static_cast<int64_t>(i), pairs, order, out.unmatched);
  }
  for (const CaseKey& key : order) {
    const PairedRounds& p = pairs.at(key);
    CaseResult result;
    result.key = key;
    result.candidate_device_model = key.device_model;
    result.baseline_strategy = p.baseline_strategy;
    result.metric = Metric::kWall;
    result.baseline = median(p.baseline);
    result.candidate = median(p.candidate);
    const ClusteredChange clustered = clustered_log_change(p.log_ratios, p.process, kPairedLevel);
    result.change = clustered.change;
    result.threshold = threshold;
    result.verdict = judge(result.change, threshold, Metric::kWall);
    if (result.change.rounds < kMinRounds) {
      result.note =
          fmt::format("{} round(s); a verdict needs {}", result.change.rounds, kMinRounds);
    } else if (clustered.processes == 1) {
      result.note = "one process: its own code layout and thread placement are not in the interval";
    }
    // Said only of a mix: reports of an older mtc-bench beside newer ones.
    if (p.from_medians > 0 && p.from_medians < static_cast<int64_t>(p.log_ratios.size())) {
      result.note +=
          fmt::format("{}{} of {} round(s) from the round medians (no per-step figures)",
                      result.note.empty() ? "" : "; ", p.from_medians, p.log_ratios.size());
    }
    if (p.skipped > 0) {
      result.note += fmt::format("{}{} round(s) without samples skipped",
                                 result.note.empty() ? "" : "; ", p.skipped);
    }
    out.cases.push_back(std::move(result));
  }
  if (out.cases.empty() && out.unmatched.empty()) {
    throw UsageError(
        fmt::format("{}: no A/B pair to compare: measure VARIANT@base with VARIANT@cand (or "
                    "VARIANT) in one run (mtc-bench --engine-lib base=PATH --engine-lib cand=PATH "
                    "--strategy engine@cand,engine@base)",
                    shown_path(options.baseline)));
  }
  return out;
}

}  // namespace mtc::bench::compare
