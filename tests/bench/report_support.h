// The reports the tests of report/ share: a small one built in C++, with the figures each test
// checks against.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "report/report.h"

namespace mtc::bench::testing_support {

// A summary whose figures spread around `median`.
inline Summary summary_of(double median) {
  Summary s;
  s.count = 100;
  s.min = s.p10 = median * 0.9;
  s.median = s.mean = median;
  s.p90 = s.p99 = s.max = median * 1.2;
  s.stdev = median * 0.1;
  s.noise = 0.004;
  return s;
}

// A case measured in 3 rounds whose medians move together, so paired ratios are exact.
inline Entry ok_entry(const std::string& strategy, double median, int device = 0) {
  Entry e;
  e.device = device;
  e.direction = "h2d";
  e.strategy = strategy;
  e.pattern = "hot";
  e.source = "cpu";
  e.target = "cuda:" + std::to_string(device);
  e.verified = true;
  e.stop_reason = "noise_target";
  e.warmup = 5;
  e.wall = summary_of(median);
  // Round medians move together (one host state per round): paired ratios are exact.
  e.rounds.rounds = 3;
  e.rounds.medians = {median, median * 1.1, median * 0.9};
  e.rounds.samples = {30, 30, 40};
  e.rounds.process = {0, 0, 0};
  e.rounds.median = median;
  e.rounds.within = 0.004;
  e.rounds.between = 0.003;
  e.rounds.interval = {median * 0.95, median * 1.05, 0.95};
  e.caller_blocked = summary_of(median / 10);
  e.gpu = summary_of(median * 0.8);
  e.cpu = summary_of(median);
  e.gb_per_s = 153628.0 / median / 1e9;
  e.tensors_per_s = 528.0 / median;
  return e;
}

// A report of one run: `to`, `engine`, a skipped case and one that failed verification.
inline Report sample_report() {
  Report r;
  using json = nlohmann::json;
  r.context = {{"tool", {{"name", "mtc-bench"}, {"version", "0.1.0"}, {"git_revision", "abc1234"}}},
               {"date", "2025-01-01T00:00:00Z"},
               {"host", "test-host"},
               {"gpus", json::array({{{"name", "NVIDIA H100 80GB HBM3"}}})},
               {"cuda", {{"driver_version", "13.0"}, {"runtime_version", "13.0"}}},
               {"torch_version", "2.11.0"}};
  r.command_line = {"mtc-bench", "--config", "configs/streampetr.json"};
  RunSection run;
  run.config_file = "configs/streampetr.json";
  run.config_name = "streampetr";
  run.tensors = 528;
  run.bytes = 153628;
  run.entries.push_back(ok_entry("to", 6.5e-3));
  run.entries.push_back(ok_entry("engine", 1.3e-4));
  Entry skipped;
  skipped.direction = "h2d";
  skipped.pattern = "hot";  // as the runner writes a skipped case (skipped_entry)
  skipped.strategy = "memcpy_batch";
  skipped.device = 0;
  skipped.status = EntryStatus::kSkipped;
  skipped.reason = "needs a driver for CUDA >= 12.8";
  run.entries.push_back(skipped);
  Entry bad = ok_entry("to_nb", 1e-3);
  bad.status = EntryStatus::kVerificationFailed;
  bad.verified = false;
  bad.reason = "/0/gt: values differ";
  run.entries.push_back(bad);
  run.notes.push_back("d2d skipped: needs two GPUs");
  compute_speedups(run);
  r.runs.push_back(run);
  r.exit_code = 4;
  return r;
}

}  // namespace mtc::bench::testing_support
