#include "compare/comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "compare/basis.h"
#include "errors.h"
#include "shown.h"
#include "stats/summary.h"

namespace mtc::bench::compare {
namespace {

// A successful case and the report it came from (whose A/B label gives its round).
struct Found {
  const ReportCases* report;
  const CaseRecord* record;
};
using Records = std::vector<Found>;
// The successful cases of one side by key, and the keys in the order the reports list them
// (the order every output follows).
struct Groups {
  std::map<CaseKey, Records> by_key;
  std::vector<CaseKey> order;
};

// The key cases match on: without the device model when the user said to ignore it.
CaseKey match_key(CaseKey key, bool ignore_device) {
  if (ignore_device) key.device_model.clear();
  return key;
}

// Successful cases by key; the others are listed as unmatched, once per key, side and status.
Groups group_cases(const std::vector<ReportCases>& reports, const char* side, bool ignore_device,
                   std::vector<Unmatched>& unmatched, std::set<std::string>& listed) {
  Groups groups;
  for (const ReportCases& r : reports) {
    for (const CaseRecord& c : r.cases) {
      if (c.status == "ok") {
        const CaseKey key = match_key(c.key, ignore_device);
        auto [it, inserted] = groups.by_key.try_emplace(key);
        if (inserted) groups.order.push_back(key);
        it->second.push_back({&r, &c});
        continue;
      }
      const std::string reason =
          c.reason.empty() ? c.status : fmt::format("{}: {}", c.status, c.reason);
      if (listed
              .insert(
                  fmt::format("{}|{}|{}|{}", side, case_label(c.key), c.key.device_model, reason))
              .second) {
        unmatched.push_back({c.key, side, reason, failed_status(c.status)});
      }
    }
  }
  return groups;
}

// Per round, for a paired job: the wall time and the speedup over `to` (the ratio over
// `memcpy_batch` is a stored baseline's only).
std::optional<double> metric_value(const CaseRecord& c, Metric metric) {
  if (metric == Metric::kWall) return c.wall.value;
  if (metric == Metric::kSpeedup && c.speedup) return c.speedup->value;
  return std::nullopt;
}

// The speedup of `found` over the `memcpy_batch` case its own report measured beside it: the
// ratio of the two medians, with their intervals added in quadrature as if independent (they
// were measured interleaved in one run, so this is the wider, safer interval).
std::optional<Estimate> over_memcpy_batch(const Found& found, const Groups& side,
                                          bool ignore_device) {
  CaseKey peer = match_key(found.record->key, ignore_device);
  if (peer.strategy == "memcpy_batch" || peer.strategy == "to") return std::nullopt;
  peer.strategy = "memcpy_batch";
  const auto it = side.by_key.find(peer);
  if (it == side.by_key.end()) return std::nullopt;
  for (const Found& f : it->second) {
    if (f.report != found.report) continue;
    const Change ratio = unpaired_change(found.record->wall, f.record->wall);
    Estimate e{ratio.ratio, ratio.low, std::nullopt, ratio.level, ratio.rounds};
    if (std::isfinite(ratio.high)) e.high = ratio.high;
    return e;
  }
  return std::nullopt;
}

std::optional<Estimate> metric_estimate(const Found& found, Metric metric, const Groups& side,
                                        bool ignore_device) {
  const CaseRecord& c = *found.record;
  switch (metric) {
    case Metric::kWall:
      return c.wall;
    case Metric::kSpeedup:
      return c.speedup;
    case Metric::kOverMemcpyBatch:
      return over_memcpy_batch(found, side, ignore_device);
  }
  return std::nullopt;
}

std::string rounds_note(const Change& change) {
  if (change.rounds < kMinRounds)
    return fmt::format("{} round(s); a verdict needs {}", change.rounds, kMinRounds);
  if (!std::isfinite(change.high)) return "no upper bound on the change";
  return "";
}

// One paired metric of one case: the rounds both sides measured, ratio per round.
std::optional<CaseResult> paired_result(const Records& base, const Records& cand, Metric metric,
                                        const std::string& label) {
  std::map<int64_t, std::pair<const CaseRecord*, const CaseRecord*>> rounds;
  for (const auto* side : {&base, &cand}) {
    for (const Found& f : *side) {
      auto& slot = rounds[f.report->ab->round];
      const CaseRecord*& mine = side == &base ? slot.first : slot.second;
      if (mine != nullptr) {
        throw UsageError(fmt::format("{} appears twice in round {} of the {}: {} and {}", label,
                                     f.report->ab->round, side == &base ? "baseline" : "candidate",
                                     shown_path(mine->file), shown_path(f.record->file)));
      }
      mine = f.record;
    }
  }
  std::vector<double> b;
  std::vector<double> c;
  int64_t unpaired = 0;
  for (const auto& [round, pair] : rounds) {
    const auto bv = pair.first ? metric_value(*pair.first, metric) : std::nullopt;
    const auto cv = pair.second ? metric_value(*pair.second, metric) : std::nullopt;
    if (bv && cv) {
      b.push_back(*bv);
      c.push_back(*cv);
    } else if (bv || cv) {
      ++unpaired;
    }
  }
  if (b.empty() && unpaired == 0) return std::nullopt;  // neither side has this metric
  CaseResult result;
  result.metric = metric;
  result.baseline = median(b);
  result.candidate = median(c);
  result.change = paired_change(b, c, kPairedLevel);
  result.note = rounds_note(result.change);
  if (unpaired > 0) {
    if (!result.note.empty()) result.note += "; ";
    result.note += fmt::format("{} round(s) measured on one side only", unpaired);
  }
  return result;
}

std::optional<CaseResult> unpaired_result(const Records& base, const Records& cand, Metric metric,
                                          const std::string& label, const Groups& base_side,
                                          const Groups& cand_side, bool ignore_device) {
  for (const auto* side : {&base, &cand}) {
    if (side->size() > 1) {
      throw UsageError(fmt::format(
          "{} appears in {} reports of the {} ({} and {}): outside one A/B job, give one "
          "report per case and side",
          label, side->size(), side == &base ? "baseline" : "candidate",
          shown_path(side->front().record->file), shown_path(side->back().record->file)));
    }
  }
  const auto b = metric_estimate(base.front(), metric, base_side, ignore_device);
  const auto c = metric_estimate(cand.front(), metric, cand_side, ignore_device);
  if (!b || !c) return std::nullopt;
  CaseResult result;
  result.metric = metric;
  result.baseline = b->value;
  result.candidate = c->value;
  result.change = unpaired_change(*b, *c);
  result.note = rounds_note(result.change);
  return result;
}

std::string_view freed_where(const std::string& point) {
  if (point == "after_start") return "once the next copy had started";
  if (point == "after_copy") return "after the copy";
  if (point.empty()) return "where the report does not say";
  return point;
}

// Why two sides' times of a case cannot be judged against each other, or "" when they can: its
// pattern was measured differently (another gap, other inputs, the previous output freed at
// another point), or under another malloc. The sides of one A/B job share their settings and
// process: the first report of each says.
std::string measured_differently(const CaseRecord& base, const CaseRecord& cand) {
  // What each side measured with, `unsaid` standing for an empty description.
  auto with = [](const std::string& b, const std::string& c, const char* unsaid) {
    return fmt::format("measured differently: the baseline with {}, the candidate with {}",
                       b.empty() ? unsaid : b, c.empty() ? unsaid : c);
  };
  if (base.malloc_library != cand.malloc_library)
    return with(base.malloc_library, cand.malloc_library, "the C library's malloc");
  if (base.pattern_settings != cand.pattern_settings)
    return with(base.pattern_settings, cand.pattern_settings, "nothing");
  if (base.step_frees_previous_output != cand.step_frees_previous_output) {
    return fmt::format(
        "measured differently: the baseline's steps freed the previous output {}, the "
        "candidate's {}",
        freed_where(base.step_frees_previous_output), freed_where(cand.step_frees_previous_output));
  }
  return "";
}

bool share_a_round(const Records& base, const Records& cand) {
  std::set<int64_t> rounds;
  for (const Found& f : base) rounds.insert(f.report->ab->round);
  return std::any_of(cand.begin(), cand.end(),
                     [&](const Found& f) { return rounds.contains(f.report->ab->round); });
}

void list_one_sided(const Groups& mine, const Groups& other, const char* side,
                    const char* other_side, std::vector<Unmatched>& unmatched) {
  for (const CaseKey& key : mine.order) {
    if (!other.by_key.contains(key)) {
      unmatched.push_back({mine.by_key.at(key).front().record->key, side,
                           fmt::format("no match in the {}", other_side)});
    }
  }
}

// A side of no case at all (a run interrupted before it measured: report_cases.h refuses any
// other) has nothing to compare; said as such, not as a side measured on no device.
void check_some_case(const std::vector<ReportCases>& side, const char* name) {
  for (const ReportCases& r : side) {
    if (!r.cases.empty()) return;
  }
  throw UsageError(
      side.size() == 1
          ? fmt::format("the {} holds no case to compare: {} was interrupted before it measured "
                        "anything",
                        name, shown_path(side.front().path))
          : fmt::format("the {} holds no case to compare: its {} reports were interrupted "
                        "before they measured anything",
                        name, side.size()));
}

}  // namespace

std::string_view to_string(Method method) {
  switch (method) {
    case Method::kPaired:
      return "paired";
    case Method::kUnpaired:
      return "unpaired";
    case Method::kInProcess:
      return "in_process";
  }
  return "?";
}

double detectable_change(const Comparison& comparison) {
  double widest = 0.0;
  for (const CaseResult& c : comparison.cases) {
    if (!(c.change.low > 0.0) || !std::isfinite(c.change.high))
      return std::numeric_limits<double>::infinity();
    widest = std::max(widest, 0.5 * std::log(c.change.high / c.change.low));
  }
  return std::expm1(widest);
}

Comparison compare_reports(const std::vector<ReportCases>& baseline,
                           const std::vector<ReportCases>& candidate,
                           const CompareOptions& options) {
  Comparison out;
  out.baseline_reports = static_cast<int64_t>(baseline.size());
  out.candidate_reports = static_cast<int64_t>(candidate.size());
  check_some_case(baseline, "baseline");
  check_some_case(candidate, "candidate");
  check_devices(baseline, candidate, options, out.notes);
  out.ab_job = paired_job(baseline, candidate);
  out.method = out.ab_job.empty() ? Method::kUnpaired : Method::kPaired;
  if (out.method == Method::kPaired) {
    out.notes.push_back(
        fmt::format("paired by round (A/B job {}): per-round log ratio of the median wall time, "
                    "t-interval at {:g} % over the rounds",
                    out.ab_job, kPairedLevel * 100.0));
  } else {
    out.notes.push_back(
        "unpaired: ratio of the medians; each run's interval as log half-widths, added in "
        "quadrature");
  }
  out.basis = resolve_basis(options, out.method == Method::kPaired, baseline, candidate, out.notes);
  out.thresholds = resolve_thresholds(options, out.basis, out.notes);
  for (const auto* side : {&baseline, &candidate}) {
    for (const ReportCases& r : *side) {
      if (r.interrupted)
        out.notes.push_back(fmt::format("{} was interrupted: it holds what finished", r.path));
    }
  }

  std::set<std::string> listed;
  const Groups base =
      group_cases(baseline, "baseline", options.ignore_device, out.unmatched, listed);
  const Groups cand =
      group_cases(candidate, "candidate", options.ignore_device, out.unmatched, listed);
  list_one_sided(base, cand, "baseline", "candidate", out.unmatched);
  list_one_sided(cand, base, "candidate", "baseline", out.unmatched);
  // A failure counts against the candidate where the baseline measured the case and never
  // failed it itself; a failure on the baseline side, or of a case the baseline did not
  // measure, is only listed.
  std::set<CaseKey> failed_on_baseline;
  for (const Unmatched& u : out.unmatched) {
    if (u.broken && u.side == "baseline")
      failed_on_baseline.insert(match_key(u.key, options.ignore_device));
  }
  for (Unmatched& u : out.unmatched) {
    const CaseKey key = match_key(u.key, options.ignore_device);
    u.broken = u.broken && u.side == "candidate" && base.by_key.contains(key) &&
               !failed_on_baseline.contains(key);
  }

  int64_t differently = 0;  // case results whose sides measured the pattern differently
  for (const CaseKey& key : base.order) {
    const Records& base_records = base.by_key.at(key);
    const auto it = cand.by_key.find(key);
    if (it == cand.by_key.end()) continue;
    const CaseKey& shown = base_records.front().record->key;
    if (out.method == Method::kPaired && !share_a_round(base_records, it->second)) {
      out.unmatched.push_back(
          {shown, "baseline", "no round of the A/B job measured it on both sides"});
      continue;
    }
    for (Metric metric : judged_metrics(out.basis)) {
      // `to` is the reference of every speedup: its own is 1 by definition.
      if (metric != Metric::kWall && shown.strategy == "to") continue;
      const std::string label = case_label(shown);
      auto result = out.method == Method::kPaired
                        ? paired_result(base_records, it->second, metric, label)
                        : unpaired_result(base_records, it->second, metric, label, base, cand,
                                          options.ignore_device);
      if (!result) continue;
      result->key = shown;
      result->candidate_device_model = it->second.front().record->key.device_model;
      result->threshold = out.thresholds.at(metric);
      result->verdict = judge(result->change, result->threshold, metric);
      if (const std::string why =
              measured_differently(*base_records.front().record, *it->second.front().record);
          !why.empty()) {
        result->verdict = Verdict::kUnsure;
        result->note = result->note.empty() ? why : result->note + "; " + why;
        ++differently;
      }
      out.cases.push_back(std::move(*result));
    }
  }
  if (differently > 0) {
    out.notes.push_back(fmt::format(
        "{} case result(s) measured differently on the two sides (another pattern setting, or "
        "the previous output freed at another point): UNSURE whatever their intervals",
        differently));
  }
  return out;
}

bool fails_on(Verdict verdict, FailOn fail_on) {
  switch (fail_on) {
    case FailOn::kSlower:
      return verdict == Verdict::kSlower;
    case FailOn::kFaster:
      return verdict == Verdict::kFaster;
    case FailOn::kAny:
      return verdict == Verdict::kSlower || verdict == Verdict::kFaster;
    case FailOn::kNone:
      return false;
  }
  return false;
}

int exit_code_for(const Comparison& comparison, FailOn fail_on) {
  const bool judges_slowdowns = fail_on == FailOn::kSlower || fail_on == FailOn::kAny;
  for (const Unmatched& u : comparison.unmatched) {
    if (u.broken && judges_slowdowns) return static_cast<int>(ExitCode::kRegression);
  }
  if (comparison.cases.empty()) return static_cast<int>(ExitCode::kUsage);
  for (const CaseResult& c : comparison.cases) {
    if (fails_on(c.verdict, fail_on)) return static_cast<int>(ExitCode::kRegression);
  }
  return static_cast<int>(ExitCode::kOk);
}

}  // namespace mtc::bench::compare
