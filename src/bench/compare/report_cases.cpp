#include "compare/report_cases.h"

#include <dirent.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "errors.h"
#include "report/json_node.h"
#include "report/report_reader.h"
#include "utf8_prefix.h"

namespace mtc::bench::compare {
namespace {

// The GPU model of a device index, as context.gpus names it: times do not carry between models.
// `at` is the JSON pointer of the case.
std::string device_model(const JsonNode& context, int device, const std::string& at) {
  if (device < 0) return "cpu";
  const JsonNode gpus = context["gpus"];
  for (size_t i = 0; i < gpus.size(); ++i) {
    // A named node: GCC 13 takes a reference through a temporary's value() for a dangling one.
    const JsonNode node = gpus.at(i);
    const nlohmann::json& gpu = node.value();
    if (!gpu.is_object()) continue;
    const auto index = gpu.find("index");
    const auto name = gpu.find("name");
    if (index != gpu.end() && index->is_number_integer() && index->get<int64_t>() == device &&
        name != gpu.end() && name->is_string()) {
      return name->get<std::string>();
    }
  }
  throw ConfigError(context.file(), at + "/device",
                    fmt::format("device {} has no entry with a name in /context/gpus", device));
}

// A number of the run's settings, if it is there and a number (reports of older revisions, or
// edited ones, may lack it).
std::optional<double> setting(const nlohmann::json& settings, const char* key) {
  const auto it = settings.is_object() ? settings.find(key) : settings.end();
  if (it == settings.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// The same as text, "?" where it is missing.
std::string setting_text(const nlohmann::json& settings, const char* key) {
  const std::optional<double> value = setting(settings, key);
  return value ? fmt::format("{:g}", *value) : "?";
}

// The settings that shape how `pattern` is measured, in words; "" for a hot case without
// overlapped work.
std::string pattern_settings(const std::string& pattern, const nlohmann::json& settings) {
  std::vector<std::string> parts;
  if (const std::optional<double> overlap = setting(settings, "overlap_us"); overlap > 0.0)
    parts.push_back(fmt::format("{:g} us of caller work before each wait", *overlap));
  if (pattern != "hot") {
    parts.push_back(fmt::format("a gap of {} us", setting_text(settings, "gap_us")));
    parts.push_back(fmt::format("{} inputs in turn", setting_text(settings, "inputs")));
  }
  if (pattern == "step-busy")
    parts.push_back(
        fmt::format("{} bytes touched in the gap", setting_text(settings, "gap_touch_bytes")));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The moment the step pattern's free moved (42fe133's commit time): every revision before it
// freed the previous output after the copy, so a report dated earlier did too.
constexpr std::string_view kFreeMovedAt = "2026-11-27T16:54:00Z";

// settings.step_frees_previous_output; for a report without it, "after_copy" when it was written
// before the free moved, else "" (not known: written by a revision between that commit and the
// field's, or by an older revision run later).
std::string step_frees_previous_output(const nlohmann::json& settings, const std::string& date) {
  const auto it =
      settings.is_object() ? settings.find("step_frees_previous_output") : settings.end();
  if (it != settings.end() && it->is_string()) return it->get<std::string>();
  return !date.empty() && date < kFreeMovedAt ? "after_copy" : "";
}

// The values a measured case can hold, seconds or ratios: from below any clock's tick to past
// any run's length. A writer never leaves them; outside them a ratio of two overflows (a median of
// 1e308 compared as +inf) or a quotient of a denormal does.
constexpr double kMinValue = 1e-12;
constexpr double kMaxValue = 1e9;

bool in_range(double value) { return value >= kMinValue && value <= kMaxValue; }

// An estimate and its interval as a report gives them: the interval holds the estimate. The
// writer takes a case's interval around the pooled median of its rounds (stats/rounds.h),
// computed apart from wall_s.median, so the two may differ in the last bit: a billionth of slack.
void check_estimate(const Estimate& e, const JsonNode& context, const std::string& value_at,
                    const std::string& interval_at) {
  constexpr double kSlack = 1e-9;
  const auto fail = [&](const std::string& at, const std::string& message) {
    throw ConfigError(context.file(), at, message);
  };
  if (!in_range(e.value))
    fail(value_at, fmt::format("{:g} must be from {:g} to {:g}", e.value, kMinValue, kMaxValue));
  if (!(e.low >= 0.0)) fail(interval_at + "/low", fmt::format("{:g} must be >= 0", e.low));
  if (e.low > e.value * (1.0 + kSlack))
    fail(interval_at + "/low",
         fmt::format("{:g} is above the estimate it bounds, {:g}", e.low, e.value));
  if (e.high && *e.high < e.value * (1.0 - kSlack))
    fail(interval_at + "/high",
         fmt::format("{:g} is below the estimate it bounds, {:g}", *e.high, e.value));
}

// `at` is the JSON pointer of the case in its report, for errors.
CaseRecord case_record(const Entry& e, const RunSection& run, const JsonNode& context,
                       const std::string& at) {
  CaseRecord c;
  c.key.config = run.config_name;
  c.key.workload_hash = run.workload_hash;
  c.key.device = e.device;
  c.key.device_model = device_model(context, e.device, at);
  c.key.direction = e.direction;
  c.key.strategy = e.strategy;
  c.key.pattern = e.pattern;
  c.status = std::string(to_string(e.status));
  c.reason = e.reason;
  c.pattern_settings = pattern_settings(e.pattern, run.settings);
  c.malloc_library = other_malloc_than_libc(context.value());
  if (e.pattern != "hot")
    c.step_frees_previous_output =
        step_frees_previous_output(run.settings, context.value().value("date", std::string()));
  if (!e.ok()) return c;
  const Interval& interval = e.rounds.interval;
  c.wall = Estimate{e.wall.median, interval.low,
                    std::isfinite(interval.high) ? std::optional(interval.high) : std::nullopt,
                    interval.level, e.rounds.rounds};
  check_estimate(c.wall, context, at + "/wall_s/median", at + "/interval_s");
  if (e.speedup) {
    c.speedup = Estimate{e.speedup->estimate, e.speedup->low.value_or(0.0), e.speedup->high,
                         e.speedup->level, e.speedup->pairs};
    check_estimate(*c.speedup, context, at + "/speedup_vs_to/estimate", at + "/speedup_vs_to");
  }
  // 0 is a round without samples (the reader allows it; pairing skips it).
  for (size_t i = 0; i < e.rounds.medians.size(); ++i) {
    const double median = e.rounds.medians[i];
    if (median != 0.0 && !in_range(median)) {
      throw ConfigError(
          context.file(), fmt::format("{}/rounds/median_s/{}", at, i),
          fmt::format("{:g} must be 0 or from {:g} to {:g}", median, kMinValue, kMaxValue));
    }
  }
  c.round_medians = e.rounds.medians;
  c.round_processes.assign(e.rounds.process.begin(), e.rounds.process.end());
  if (e.paired_steps) {
    c.paired_baseline = e.paired_steps->baseline;
    c.paired_log_ratios = e.paired_steps->median_log_ratio;
  }
  return c;
}

// A file or folder by device and inode: what a link leads to, whatever the path that reached it.
using FileId = std::pair<dev_t, ino_t>;

// Symbolic links are followed (a folder of reports may link in a stored baseline kept
// elsewhere), but each folder and each file is visited once, whichever link reaches it first in
// name order: a folder linked into itself would otherwise be walked again at every level (its
// paths growing as 2^depth with two such links) and one report read under many names.
// POSIX rather than std::filesystem: libtorch.so, linked into the same program, exports
// copies of some std::filesystem functions that misbehave.
void collect_json_files(const std::string& folder, std::set<FileId>& visited,
                        std::vector<std::string>& files) {
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) throw ConfigError(folder, "", "cannot open the folder");
  std::vector<std::string> names;
  while (const dirent* item = readdir(dir)) {
    const std::string name = item->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string path = folder + "/" + name;
    struct stat info {};
    const bool exists = stat(path.c_str(), &info) == 0;
    const bool folder_entry = exists && S_ISDIR(info.st_mode);
    if (!folder_entry && !name.ends_with(".json")) continue;
    // A .json that is no file (a broken link, a pipe) is listed, and refused when read.
    if (exists && !visited.insert({info.st_dev, info.st_ino}).second) continue;
    if (folder_entry) {
      collect_json_files(path, visited, files);
    } else if (name.size() > 5) {
      files.push_back(path);
    }
  }
}

// Whether the document is `compare`'s own JSON output (it carries compare_version), which a CI
// job may well write into the folder of the reports it compared.
bool is_comparison_output(const nlohmann::json& doc) {
  return doc.is_object() && doc.contains("compare_version");
}

}  // namespace

std::string case_label(const CaseKey& key) {
  std::string label =
      fmt::format("{} {} {} {}", key.config, key.pattern, key.direction, key.strategy);
  if (key.device > 0) label += fmt::format(" gpu{}", key.device);
  return label;
}

ReportCases report_cases(const Report& report, const std::string& path) {
  ReportCases out;
  out.path = path;
  // The reader (report/report_reader.h) has checked these fields' types.
  if (report.ab.is_object()) {
    out.ab = AbLabel{report.ab.value("job", std::string()), report.ab.value("side", std::string()),
                     report.ab.value("round", int64_t{0})};
  }
  out.host = report.context.value("host", std::string());
  out.day = utf8_prefix(report.context.value("date", std::string()), 10);
  out.interrupted = report.interrupted;
  // A run measures or skips every case it plans before its report is written; only a run
  // stopped before its first case (--processes, interrupted before a process measured) writes
  // none, and says it was interrupted.
  const bool no_case = std::all_of(report.runs.begin(), report.runs.end(),
                                   [](const RunSection& run) { return run.entries.empty(); });
  if (no_case && !report.interrupted) {
    throw ConfigError(path, "/runs",
                      "no case, and the run was not interrupted: a report lists every case of "
                      "its run");
  }
  const JsonNode context(report.context, "/context", path);
  for (size_t i = 0; i < report.runs.size(); ++i) {
    const RunSection& run = report.runs[i];
    for (size_t j = 0; j < run.entries.size(); ++j) {
      // A Report keeps the order of the document, so this is where the case was read from.
      const std::string at = fmt::format("/runs/{}/results/{}", i, j);
      out.cases.push_back(case_record(run.entries[j], run, context, at));
      out.cases.back().file = path;
    }
  }
  return out;
}

ReportCases read_report_cases(const std::string& path) {
  return report_cases(read_report(path), path);
}

std::vector<ReportCases> read_reports(const std::string& file_or_folder) {
  struct stat info {};
  if (stat(file_or_folder.c_str(), &info) != 0) {
    throw ConfigError(file_or_folder, "", "no such file or folder");
  }
  if (!S_ISDIR(info.st_mode)) return {read_report_cases(file_or_folder)};
  std::vector<std::string> files;
  std::set<FileId> visited{{info.st_dev, info.st_ino}};
  collect_json_files(file_or_folder, visited, files);
  if (files.empty()) throw ConfigError(file_or_folder, "", "the folder holds no .json report");
  std::vector<ReportCases> reports;
  for (const std::string& file : files) {
    const nlohmann::json doc = read_report_document(file);
    if (is_comparison_output(doc)) continue;  // a comparison in the folder is no report
    reports.push_back(report_cases(read_report(doc, file), file));
  }
  if (reports.empty()) throw ConfigError(file_or_folder, "", "the folder holds no .json report");
  return reports;
}

}  // namespace mtc::bench::compare
