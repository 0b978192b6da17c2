#include "compare/compare_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

namespace mtc::bench::compare {
namespace {

using json = nlohmann::json;

struct Column {
  std::string title;
  bool right;  // numbers right-aligned
};

const std::array<Column, 10> kColumns{{{"config", false},
                                       {"pattern", false},
                                       {"direction", false},
                                       {"strategy", false},
                                       {"device", false},
                                       {"metric", false},
                                       {"baseline", true},
                                       {"candidate", true},
                                       {"change", true},
                                       {"interval", false}}};

std::string device_text(const CaseResult& c) {
  std::string text = c.key.device_model;
  if (c.key.device > 0) text += fmt::format(" #{}", c.key.device);
  if (c.candidate_device_model != c.key.device_model) text += " vs " + c.candidate_device_model;
  return text;
}

std::vector<std::string> row(const CaseResult& c) {
  std::string verdict(to_string(c.verdict));
  if (!c.note.empty()) verdict += " (" + c.note + ")";
  return {c.key.config,
          c.key.pattern,
          c.key.direction,
          c.baseline_strategy.empty()
              ? c.key.strategy
              : fmt::format("{} vs {}", c.key.strategy, c.baseline_strategy),
          device_text(c),
          std::string(to_string(c.metric)),
          format_value(c.metric, c.baseline),
          format_value(c.metric, c.candidate),
          format_change(c.change.ratio),
          format_interval(c.change),
          verdict};
}

std::map<Verdict, int> counts(const Comparison& comparison) {
  std::map<Verdict, int> n;
  for (const CaseResult& c : comparison.cases) ++n[c.verdict];
  return n;
}

// "could see +-1.8 %": the widest interval's half-width, what the job could have detected.
std::string detectable_text(const Comparison& comparison) {
  if (comparison.cases.empty()) return "";
  const double d = detectable_change(comparison);
  if (!std::isfinite(d)) return "; could see nothing on some case (an unbounded interval)";
  return fmt::format("; could see \u00b1{:.1f} % (the widest interval's half-width)", d * 100.0);
}

std::string summary_line(const Comparison& comparison, FailOn fail_on, int exit_code) {
  const auto n = counts(comparison);
  auto count = [&](Verdict v) { return n.contains(v) ? n.at(v) : 0; };
  const auto broken = std::count_if(comparison.unmatched.begin(), comparison.unmatched.end(),
                                    [](const Unmatched& u) { return u.broken; });
  return fmt::format(
      "{} SLOWER, {} FASTER, {} UNSURE, {} SAME; {} unmatched{}{}; fail on {}: exit {}",
      count(Verdict::kSlower), count(Verdict::kFaster), count(Verdict::kUnsure),
      count(Verdict::kSame), comparison.unmatched.size(),
      broken > 0 ? fmt::format(", {} BROKEN on the candidate", broken) : "",
      detectable_text(comparison), to_string(fail_on), exit_code);
}

std::string unmatched_label(const Unmatched& u) {
  return fmt::format("{}{} ({}{}): {}", u.broken ? "BROKEN (the baseline measured it) " : "",
                     case_label(u.key), u.key.device_model,
                     u.key.workload_hash.empty() ? "" : ", workload " + u.key.workload_hash,
                     u.reason);
}

std::string signed_percent(double ratio) {
  if (!std::isfinite(ratio)) return ratio > 0 ? "+inf" : "-inf";
  return fmt::format("{:+.1f} %", (ratio - 1.0) * 100.0);
}

}  // namespace

std::string format_change(double ratio) { return signed_percent(ratio); }

std::string format_interval(const Change& change) {
  return fmt::format("[{}, {}]", signed_percent(change.low), signed_percent(change.high));
}

std::string format_value(Metric metric, double value) {
  if (larger_is_better(metric)) return fmt::format("{:.3g}x", value);
  const double a = std::abs(value);
  if (a >= 1.0) return fmt::format("{:.3g} s", value);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", value * 1e3);
  if (a >= 1e-6) return fmt::format("{:.3g} us", value * 1e6);
  return fmt::format("{:.3g} ns", value * 1e9);
}

void report_comparison(ComparisonReporter& reporter, const Comparison& comparison, FailOn fail_on,
                       int exit_code) {
  reporter.begin(comparison);
  for (const CaseResult& c : comparison.cases) reporter.run(c);
  reporter.end(ComparisonOutcome{comparison, fail_on, exit_code});
}

void ConsoleComparisonReporter::begin(const Comparison& comparison) {
  rows_.clear();
  for (const std::string& note : comparison.notes) out_ << note << "\n";
}

void ConsoleComparisonReporter::run(const CaseResult& result) { rows_.push_back(row(result)); }

void ConsoleComparisonReporter::end(const ComparisonOutcome& outcome) {
  const Comparison& comparison = outcome.comparison;
  std::vector<std::string> header;
  for (const Column& c : kColumns) header.push_back(c.title);
  header.push_back("verdict");
  std::vector<size_t> width(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows_) {
    for (size_t i = 0; i + 1 < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      const bool right = i < kColumns.size() && kColumns[i].right;
      out += i + 1 == cells.size() ? cells[i]
             : right               ? fmt::format("{:>{}}  ", cells[i], width[i])
                                   : fmt::format("{:<{}}  ", cells[i], width[i]);
    }
    out += "\n";
  };
  line(header);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& r : rows_) line(r);
  if (!comparison.unmatched.empty()) {
    out += "not compared:\n";
    for (const Unmatched& u : comparison.unmatched)
      out += fmt::format("  {}: {}\n", u.side, unmatched_label(u));
  }
  if (comparison.cases.empty()) out += "no case matched: nothing was compared\n";
  out += summary_line(comparison, outcome.fail_on, outcome.exit_code) + "\n";
  out_ << out;
}

void MarkdownComparisonReporter::end(const ComparisonOutcome& outcome) {
  const Comparison& comparison = outcome.comparison;
  std::string out = "## mtc-bench compare\n\n**" +
                    summary_line(comparison, outcome.fail_on, outcome.exit_code) + "**\n\n";
  for (const std::string& note : comparison.notes) out += "- " + note + "\n";
  out += "\n|";
  for (const Column& c : kColumns) out += " " + c.title + " |";
  out += " verdict |\n|";
  for (const Column& c : kColumns) out += c.right ? "---:|" : "---|";
  out += "---|\n";
  for (const CaseResult& c : comparison.cases) {
    std::vector<std::string> cells = row(c);
    const bool flagged = c.verdict == Verdict::kSlower || c.verdict == Verdict::kFaster;
    if (flagged) cells.back() = "**" + cells.back() + "**";
    out += "|";
    for (const std::string& cell : cells) out += " " + cell + " |";
    out += "\n";
  }
  if (!comparison.unmatched.empty()) {
    out += "\nNot compared:\n\n";
    for (const Unmatched& u : comparison.unmatched)
      out += fmt::format("- {}: {}\n", u.side, unmatched_label(u));
  }
  out_ << out;
}

void JsonComparisonReporter::end(const ComparisonOutcome& outcome) {
  // Replace, not throw, on invalid UTF-8: a report's strings must not lose the verdict.
  out_ << comparison_json(outcome.comparison, outcome.fail_on, outcome.exit_code)
              .dump(2, ' ', false, json::error_handler_t::replace)
       << "\n";
}

json comparison_json(const Comparison& comparison, FailOn fail_on, int exit_code) {
  auto finite = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  auto key_json = [](const CaseKey& k) {
    return json{{"config", k.config},    {"workload_hash", k.workload_hash},
                {"pattern", k.pattern},  {"device_model", k.device_model},
                {"device", k.device},    {"direction", k.direction},
                {"strategy", k.strategy}};
  };
  json cases = json::array();
  for (const CaseResult& c : comparison.cases) {
    json j = key_json(c.key);
    j["candidate_device_model"] = c.candidate_device_model;
    j["baseline_strategy"] =
        c.baseline_strategy.empty() ? json(nullptr) : json(c.baseline_strategy);
    j["metric"] = to_string(c.metric);
    j["larger_is_better"] = larger_is_better(c.metric);
    j["baseline"] = c.baseline;
    j["candidate"] = c.candidate;
    j["ratio"] = finite(c.change.ratio);
    j["low"] = finite(c.change.low);
    j["high"] = finite(c.change.high);
    j["level"] = c.change.level;
    j["rounds"] = c.change.rounds;
    j["threshold"] = c.threshold;
    j["verdict"] = to_string(c.verdict);
    j["note"] = c.note;
    cases.push_back(std::move(j));
  }
  json unmatched = json::array();
  for (const Unmatched& u : comparison.unmatched) {
    json j = key_json(u.key);
    j["side"] = u.side;
    j["reason"] = u.reason;
    j["broken"] = u.broken;
    unmatched.push_back(std::move(j));
  }
  json thresholds = json::object();
  for (const auto& [metric, value] : comparison.thresholds)
    thresholds[std::string(to_string(metric))] = value;
  json counted = json::object();
  for (Verdict v : {Verdict::kSame, Verdict::kFaster, Verdict::kSlower, Verdict::kUnsure}) {
    const auto n = counts(comparison);
    counted[std::string(to_string(v))] = n.contains(v) ? n.at(v) : 0;
  }
  return json{
      {"compare_version", kCompareJsonVersion},
      {"method", to_string(comparison.method)},
      {"baseline_kind", to_string(comparison.basis)},
      {"ab_job", comparison.ab_job.empty() ? json(nullptr) : json(comparison.ab_job)},
      {"min_rounds", kMinRounds},
      {"detectable",
       comparison.cases.empty() ? json(nullptr) : finite(detectable_change(comparison))},
      {"thresholds", thresholds},
      {"reports",
       {{"baseline", comparison.baseline_reports}, {"candidate", comparison.candidate_reports}}},
      {"notes", comparison.notes},
      {"cases", std::move(cases)},
      {"unmatched", std::move(unmatched)},
      {"counts", std::move(counted)},
      {"fail_on", to_string(fail_on)},
      {"exit_code", exit_code}};
}

}  // namespace mtc::bench::compare
