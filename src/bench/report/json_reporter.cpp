#include <cmath>

#include "report/reporter.h"

namespace mtc::bench {
namespace {

using json = nlohmann::json;

json summary_json(const Summary& s) {
  return json{{"count", s.count}, {"min", s.min},     {"p10", s.p10}, {"median", s.median},
              {"mean", s.mean},   {"stdev", s.stdev}, {"p90", s.p90}, {"p99", s.p99},
              {"max", s.max},     {"noise", s.noise}};
}

json optional_summary(const std::optional<Summary>& s) {
  return s ? summary_json(*s) : json(nullptr);
}

// +inf (an unbounded interval) becomes null through replace_non_finite.
json interval_json(const Interval& i) {
  return json{{"low", i.low}, {"high", i.high}, {"level", i.level}};
}

json speedup_json(const std::optional<RatioEstimate>& r) {
  if (!r) return nullptr;
  return json{{"estimate", r->estimate},
              {"low", r->low ? json(*r->low) : json(nullptr)},
              {"high", r->high ? json(*r->high) : json(nullptr)},
              {"level", r->level},
              {"rounds", r->pairs}};
}

json rounds_json(const RoundsSummary& r) {
  return json{
      {"count", r.rounds}, {"median_s", r.medians}, {"samples", r.samples}, {"process", r.process}};
}

json paired_steps_json(const PairedSteps& p) {
  json ratios = json::array();
  for (const std::optional<double>& r : p.median_log_ratio)
    ratios.push_back(r ? json(*r) : json(nullptr));
  return json{{"baseline", p.baseline}, {"median_log_ratio", ratios}};
}

json entry_json(const Entry& e) {
  json j{{"device", e.device},
         {"direction", e.direction},
         {"strategy", e.strategy},
         {"pattern", e.pattern},
         {"source", e.source},
         {"target", e.target},
         {"status", std::string(to_string(e.status))},
         {"reason", e.reason},
         {"verified", e.verified ? json(*e.verified) : json(nullptr)}};
  if (e.status == EntryStatus::kSkipped) return j;
  j["stop_reason"] = e.stop_reason;
  j["warmup"] = e.warmup;
  j["samples"] = e.wall.count;
  j["measure_time_s"] = e.measure_time_s;
  j["wall_s"] = summary_json(e.wall);
  j["interval_s"] = interval_json(e.rounds.interval);
  j["noise"] = {{"within", e.rounds.within},
                {"between", e.rounds.between},
                {"reported", e.rounds.reported()}};
  j["rounds"] = rounds_json(e.rounds);
  j["caller_blocked_s"] = summary_json(e.caller_blocked);
  j["gpu_s"] = optional_summary(e.gpu);
  j["cpu_s"] = summary_json(e.cpu);
  j["exposed_s"] = optional_summary(e.exposed);
  j["throughput"] = {{"gb_per_s", e.gb_per_s}, {"tensors_per_s", e.tensors_per_s}};
  j["speedup_vs_to"] = speedup_json(e.speedup);
  if (e.paired_steps) j["paired_steps"] = paired_steps_json(*e.paired_steps);
  if (!e.engine.is_null()) j["engine"] = e.engine;
  if (!e.raw_samples.is_null()) j["raw_samples"] = e.raw_samples;
  return j;
}

json aggregate_json(const Aggregate& a) {
  return json{{"direction", a.direction},
              {"strategy", a.strategy},
              {"pattern", a.pattern},
              {"devices", a.devices},
              {"gb_per_s", a.gb_per_s},
              {"tensors_per_s", a.tensors_per_s},
              {"slowest_median_s", a.slowest_median_s}};
}

json run_json(const RunSection& run) {
  json entries = json::array();
  for (const Entry& e : run.entries) entries.push_back(entry_json(e));
  json aggregates = json::array();
  for (const Aggregate& a : run.aggregates) aggregates.push_back(aggregate_json(a));
  return json{{"sweep_point", run.sweep_point},
              {"config",
               {{"file", run.config_file},
                {"name", run.config_name},
                {"seed", run.seed},
                {"given", run.config_given},
                {"resolved", run.config_resolved}}},
              {"settings", run.settings},
              {"workload",
               {{"hash", run.workload_hash},
                {"tensors", run.tensors},
                {"bytes", run.bytes},
                {"summary", run.workload}}},
              {"results", std::move(entries)},
              {"aggregates", std::move(aggregates)},
              {"notes", run.notes},
              {"host_canary", run.host_canary}};
}

}  // namespace

void replace_non_finite(json& value) {
  if (value.is_number_float()) {
    if (!std::isfinite(value.get<double>())) value = nullptr;
  } else if (value.is_structured()) {
    for (auto& child : value) replace_non_finite(child);
  }
}

json report_to_json(const Report& report) {
  json runs = json::array();
  for (const RunSection& run : report.runs) runs.push_back(run_json(run));
  json doc{{"schema_version", kReportSchemaVersion},
           {"context", report.context},
           {"command_line", report.command_line},
           {"profile", report.profile},
           {"ab", report.ab},
           {"runs", std::move(runs)},
           {"exit_code", report.exit_code},
           {"interrupted", report.interrupted}};
  replace_non_finite(doc);
  return doc;
}

void JsonReporter::end(const Report& report) {
  // Replace, not throw, on invalid UTF-8: a host name or CPU model must not lose the report.
  out_ << report_to_json(report).dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace mtc::bench
