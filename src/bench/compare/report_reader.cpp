#include "compare/report_reader.h"

#include "errors.h"

#include <dirent.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>

namespace mtc::bench::compare {
namespace {

using json = nlohmann::json;

// Field access that names the JSON pointer of whatever is missing or mistyped.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw ConfigError(file_, path, message);
  }
  const json& field(const json& object, const std::string& path, const char* key) const {
    if (!object.is_object()) fail(path, "expected an object");
    const auto it = object.find(key);
    if (it == object.end()) fail(path + "/" + key, "missing (not a schema v2 report?)");
    return *it;
  }
  std::string string(const json& object, const std::string& path, const char* key) const {
    const json& value = field(object, path, key);
    if (!value.is_string()) fail(path + "/" + key, "expected a string");
    return value.get<std::string>();
  }
  double number(const json& object, const std::string& path, const char* key) const {
    const json& value = field(object, path, key);
    if (!value.is_number()) fail(path + "/" + key, "expected a number");
    return value.get<double>();
  }
  std::optional<double> number_or_null(const json& object, const std::string& path, const char* key) const {
    const json& value = field(object, path, key);
    if (value.is_null()) return std::nullopt;
    if (!value.is_number()) fail(path + "/" + key, "expected a number or null");
    return value.get<double>();
  }
  int64_t integer(const json& object, const std::string& path, const char* key) const {
    const json& value = field(object, path, key);
    if (!value.is_number_integer()) fail(path + "/" + key, "expected an integer");
    return value.get<int64_t>();
  }

 private:
  std::string file_;
};

std::optional<AbLabel> read_ab(const Reader& r, const json& doc) {
  const json& ab = r.field(doc, "", "ab");
  if (ab.is_null()) return std::nullopt;
  AbLabel label{r.string(ab, "/ab", "job"), r.string(ab, "/ab", "side"), r.integer(ab, "/ab", "round")};
  if (label.job.empty()) r.fail("/ab/job", "must not be empty");
  if (label.round < 0) r.fail("/ab/round", "must be >= 0");
  return label;
}

// The GPU model of a device index, as context.gpus names it.
std::string device_model(const Reader& r, const json& context, int device, const std::string& entry_path) {
  if (device < 0) return "cpu";
  const json& gpus = r.field(context, "/context", "gpus");
  if (!gpus.is_array()) r.fail("/context/gpus", "expected an array");
  for (size_t i = 0; i < gpus.size(); ++i) {
    const json& gpu = gpus[i];
    if (gpu.is_object() && gpu.value("index", -1) == device && gpu.contains("name") && gpu["name"].is_string()) {
      return gpu["name"].get<std::string>();
    }
  }
  r.fail(entry_path + "/device", fmt::format("device {} has no entry with a name in /context/gpus", device));
}

Estimate read_wall(const Reader& r, const json& entry, const std::string& path) {
  Estimate e;
  e.value = r.number(r.field(entry, path, "wall_s"), path + "/wall_s", "median");
  const json& interval = r.field(entry, path, "interval_s");
  e.low = r.number(interval, path + "/interval_s", "low");
  e.high = r.number_or_null(interval, path + "/interval_s", "high");
  e.level = r.number(interval, path + "/interval_s", "level");
  e.rounds = r.integer(r.field(entry, path, "rounds"), path + "/rounds", "count");
  if (!(e.value > 0.0)) r.fail(path + "/wall_s/median", "must be > 0");
  return e;
}

std::optional<Estimate> read_speedup(const Reader& r, const json& entry, const std::string& path) {
  const json& speedup = r.field(entry, path, "speedup_vs_to");
  if (speedup.is_null()) return std::nullopt;
  const std::string at = path + "/speedup_vs_to";
  if (!speedup.is_object()) r.fail(at, "expected an object or null (a bare number is schema v1)");
  Estimate e;
  e.value = r.number(speedup, at, "estimate");
  e.low = r.number_or_null(speedup, at, "low").value_or(0.0);
  e.high = r.number_or_null(speedup, at, "high");
  e.level = r.number(speedup, at, "level");
  e.rounds = r.integer(speedup, at, "rounds");
  if (!(e.value > 0.0)) r.fail(at + "/estimate", "must be > 0");
  return e;
}

// The per-round medians and their processes: what an in-process A/B pairs round by round.
void read_rounds(const Reader& r, const json& entry, const std::string& path, CaseRecord& c) {
  const std::string at = path + "/rounds";
  const json& rounds = r.field(entry, path, "rounds");
  const json& medians = r.field(rounds, at, "median_s");
  const json& processes = r.field(rounds, at, "process");
  if (!medians.is_array() || !processes.is_array() || medians.size() != processes.size()) {
    r.fail(at, "median_s and process must be arrays of one length");
  }
  for (size_t i = 0; i < medians.size(); ++i) {
    // 0 is a round without samples (the in-process pairing skips it).
    if (!medians[i].is_number() || !(medians[i].get<double>() >= 0.0)) {
      r.fail(fmt::format("{}/median_s/{}", at, i), "expected a number >= 0");
    }
    if (!processes[i].is_number_integer()) r.fail(fmt::format("{}/process/{}", at, i), "expected an integer");
    c.round_medians.push_back(medians[i].get<double>());
    c.round_processes.push_back(processes[i].get<int64_t>());
  }
}

// An A/B pair's per-step figures (optional): one per round, a number or null.
void read_paired_steps(const Reader& r, const json& entry, const std::string& path, CaseRecord& c) {
  const auto found = entry.find("paired_steps");
  if (found == entry.end()) return;
  const std::string at = path + "/paired_steps";
  c.paired_baseline = r.string(*found, at, "baseline");
  const json& ratios = r.field(*found, at, "median_log_ratio");
  if (!ratios.is_array() || ratios.size() != c.round_medians.size()) {
    r.fail(at + "/median_log_ratio", "expected an array with one value per round");
  }
  for (size_t i = 0; i < ratios.size(); ++i) {
    if (ratios[i].is_null()) {
      c.paired_log_ratios.emplace_back(std::nullopt);
      continue;
    }
    if (!ratios[i].is_number() || !std::isfinite(ratios[i].get<double>())) {
      r.fail(fmt::format("{}/median_log_ratio/{}", at, i), "expected a finite number or null");
    }
    c.paired_log_ratios.emplace_back(ratios[i].get<double>());
  }
}

CaseRecord read_entry(const Reader& r, const json& context, const json& entry, const std::string& path,
                      const std::string& config, const std::string& hash) {
  CaseRecord c;
  c.key.config = config;
  c.key.workload_hash = hash;
  c.key.device = static_cast<int>(r.integer(entry, path, "device"));
  c.key.device_model = device_model(r, context, c.key.device, path);
  c.key.direction = r.string(entry, path, "direction");
  c.key.strategy = r.string(entry, path, "strategy");
  c.key.pattern = r.string(entry, path, "pattern");
  c.status = r.string(entry, path, "status");
  c.reason = entry.contains("reason") && entry["reason"].is_string() ? entry["reason"].get<std::string>() : "";
  if (c.status == "ok") {
    c.wall = read_wall(r, entry, path);
    c.speedup = read_speedup(r, entry, path);
    read_rounds(r, entry, path, c);
    read_paired_steps(r, entry, path, c);
  }
  return c;
}

json parse_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path, "", "cannot open the file");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    // Not only parse errors: a number beyond a double's range (1e999) is an out_of_range thrown
    // while parsing (found by fuzzing; it ended the program).
    throw ConfigError(path, "", fmt::format("not valid JSON ({})", e.what()));
  }
}

bool is_directory(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// POSIX rather than std::filesystem: libtorch.so, linked into the same program, exports
// copies of some std::filesystem functions that misbehave.
void collect_json_files(const std::string& folder, std::vector<std::string>& files) {
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
    if (is_directory(path)) {
      collect_json_files(path, files);
    } else if (name.size() > 5 && name.ends_with(".json")) {
      files.push_back(path);
    }
  }
}

}  // namespace

std::string case_label(const CaseKey& key) {
  std::string label = fmt::format("{} {} {} {}", key.config, key.pattern, key.direction, key.strategy);
  if (key.device > 0) label += fmt::format(" gpu{}", key.device);
  return label;
}

ReportCases read_report(const std::string& path) {
  const json doc = parse_file(path);
  const Reader r(path);
  if (!doc.is_object()) r.fail("", "expected a JSON object (an mtc-bench report)");
  const json& version = r.field(doc, "", "schema_version");
  if (!version.is_number_integer() || version.get<int64_t>() != kReadableSchemaVersion) {
    r.fail("/schema_version", fmt::format("schema version {}, but this mtc-bench reads version {} only: measure "
                                          "both sides with one version of mtc-bench",
                                          version.dump(), kReadableSchemaVersion));
  }
  ReportCases report;
  report.path = path;
  report.ab = read_ab(r, doc);
  const json& context = r.field(doc, "", "context");
  report.host = r.string(context, "/context", "host");
  report.day = r.string(context, "/context", "date").substr(0, 10);
  report.interrupted = doc.value("interrupted", false);
  const json& runs = r.field(doc, "", "runs");
  if (!runs.is_array()) r.fail("/runs", "expected an array");
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string run_path = fmt::format("/runs/{}", i);
    const json& run = runs[i];
    const std::string config = r.string(r.field(run, run_path, "config"), run_path + "/config", "name");
    const std::string hash = r.string(r.field(run, run_path, "workload"), run_path + "/workload", "hash");
    const json& results = r.field(run, run_path, "results");
    if (!results.is_array()) r.fail(run_path + "/results", "expected an array");
    for (size_t j = 0; j < results.size(); ++j) {
      report.cases.push_back(
          read_entry(r, context, results[j], fmt::format("{}/results/{}", run_path, j), config, hash));
      report.cases.back().file = path;
    }
  }
  return report;
}

std::vector<ReportCases> read_reports(const std::string& file_or_folder) {
  struct stat info {};
  if (stat(file_or_folder.c_str(), &info) != 0) throw ConfigError(file_or_folder, "", "no such file or folder");
  if (!S_ISDIR(info.st_mode)) return {read_report(file_or_folder)};
  std::vector<std::string> files;
  collect_json_files(file_or_folder, files);
  if (files.empty()) throw ConfigError(file_or_folder, "", "the folder holds no .json report");
  std::vector<ReportCases> reports;
  for (const std::string& file : files) reports.push_back(read_report(file));
  return reports;
}

}  // namespace mtc::bench::compare
