// What `compare` needs of a report: one record per measured case, keyed as the schema says
// cases match across reports, and the report's A/B label, host and day. Reports are read by the
// one reader of the format (report/report_reader.h); this file only picks from the Report.
// Pure (no ATen).
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/report.h"

namespace mtc::bench::compare {

// What identifies one case across reports (schema v2: "Key for matching entries").
struct CaseKey {
  std::string config;         // runs[i].config.name
  std::string workload_hash;  // runs[i].workload.hash
  std::string pattern;        // "hot" or "step"
  std::string device_model;   // context.gpus[device].name, or "cpu"
  std::string direction;
  std::string strategy;
  int device = -1;  // GPU index; -1 without a GPU

  auto operator<=>(const CaseKey&) const = default;
};

// "streampetr hot h2d engine" (with " gpu1" when the device index is not 0 or -1).
std::string case_label(const CaseKey& key);

// A point estimate with the interval the report gives for it. `high` is empty when the report
// knows no upper bound (a single round: schema v2 writes null).
struct Estimate {
  double value = 0.0;
  double low = 0.0;
  std::optional<double> high;
  double level = 0.95;
  int64_t rounds = 0;
};

struct CaseRecord {
  CaseKey key;
  std::string status;                    // "ok", "skipped", "failed", "verification_failed"
  std::string reason;                    // why not ok
  Estimate wall;                         // wall_s.median with interval_s; meaningful when ok
  std::optional<Estimate> speedup;       // speedup_vs_to, when the run measured `to` too
  std::vector<double> round_medians;     // rounds.median_s: the median wall time of each round
  std::vector<int64_t> round_processes;  // rounds.process: which process measured each round
  // paired_steps, on an A/B pair's candidate: the baseline strategy it was sampled with, and
  // per round the median per-step log ratio against it (absent for a round without one).
  std::string paired_baseline;
  std::vector<std::optional<double>> paired_log_ratios;
  // How its pattern was measured, from the run's settings: what must be the same on both sides
  // for their times to be compared (the caller's work before each wait; a step's gap, inputs in
  // turn and the bytes a busy gap touches), in words, and where a step freed the previous output
  // (settings.step_frees_previous_output; empty where the report does not say).
  std::string pattern_settings;
  std::string step_frees_previous_output;
  // Whose malloc the process used (context.malloc): "" for the C library's, or a report without
  // the field (every report before it ran with glibc's), else the library's name.
  std::string malloc_library;
  std::string file;  // the report it came from
};

// One report as `compare` sees it: the file, its A/B label, host and day, and its cases.
struct ReportCases {
  std::string path;
  std::optional<AbLabel> ab;
  std::string host;  // context.host
  std::string day;   // the date part of context.date (YYYY-MM-DD)
  bool interrupted = false;
  std::vector<CaseRecord> cases;
};

// The cases of `report`, read from `path`. Throws ConfigError naming the file and the JSON
// pointer of a case that cannot be compared: a GPU with no name in context.gpus, a median or a
// speedup that is not above 0.
ReportCases report_cases(const Report& report, const std::string& path);

// Reads one report (report/report_reader.h: ConfigError for what is not a report of schema
// version 2) and picks its cases.
ReportCases read_report_cases(const std::string& path);

// A report file, or every *.json file under a folder (recursively, in name order; links are
// followed, each folder and file read once however many links lead to it). Throws ConfigError
// when the path does not exist, a folder holds no report, or a file is no report (compare's own
// --json output in a folder is skipped).
std::vector<ReportCases> read_reports(const std::string& file_or_folder);

}  // namespace mtc::bench::compare
