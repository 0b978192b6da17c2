// The one reader of the JSON report: what the JSON reporter writes reads back as it was, fields
// added within schema version 2 may be absent, and whatever is wrong is named by its place.
#include "report/report_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>

#include "errors.h"
#include "report/reporter.h"
#include "report_support.h"
#include "temp_dir.h"

namespace mtc::bench {
namespace {

using json = nlohmann::json;
using testing_support::ok_entry;
using testing_support::sample_report;
using testing_support::summary_of;
using testing_support::TempDir;

// The sample report with every optional part filled in.
Report full_report() {
  Report r = sample_report();
  r.ab = {{"job", "pr-1"}, {"side", "candidate"}, {"round", 2}};
  r.profile = true;
  r.interrupted = true;
  r.exit_code = 130;
  RunSection& run = r.runs[0];
  run.sweep_point = {{"samples", "16"}};
  run.seed = std::numeric_limits<uint64_t>::max();
  run.config_given = {{"name", "streampetr"}};
  run.settings = {{"interval_level", 0.95}, {"processes", 3}};
  run.workload = {{"containers", 145}};
  run.workload_hash = "0123456789abcdef";
  run.host_canary = {{"state_ratio", 1.1}, {"changed_state", false}};
  Entry& engine = run.entries[1];
  engine.paired_steps = PairedSteps{"engine@base", {0.01, std::nullopt, -0.02}};
  engine.engine = {{"revision", "abc1234"}, {"options", {{"pack_cpu_tensors", true}}}};
  engine.exposed = summary_of(2e-5);
  engine.raw_samples = {{"round", {0, 1, 2}},
                        {"wall_s", {1e-4, 2e-4, 3e-4}},
                        {"cpu_s", {1e-4, 2e-4, 3e-4}},
                        {"caller_blocked_s", {1e-5, 2e-5, 3e-5}},
                        {"gpu_s", nullptr},
                        {"exposed_s", nullptr}};
  run.entries[0].rounds.interval.high = std::numeric_limits<double>::infinity();
  run.entries[0].wall.noise = std::numeric_limits<double>::quiet_NaN();
  run.entries[0].gpu.reset();
  run.entries.push_back(ok_entry("engine", 2e-4, 1));
  compute_aggregates(run);
  return r;
}

// The reader's error for `doc` changed by `edit`, or "" when it reads.
std::string error_of(const std::function<void(json&)>& edit) {
  json doc = report_to_json(full_report());
  edit(doc);
  try {
    read_report(doc, "r.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ReportReader, ReadsBackWhatTheJsonReporterWrote) {
  const json written = report_to_json(full_report());
  const Report read = read_report(written, "r.json");
  EXPECT_EQ(report_to_json(read), written);
  const Entry& engine = read.runs[0].entries[1];
  EXPECT_EQ(engine.status, EntryStatus::kOk);
  EXPECT_DOUBLE_EQ(engine.wall.median, 1.3e-4);
  EXPECT_EQ(engine.rounds.process, (std::vector<int>{0, 0, 0}));
  ASSERT_TRUE(engine.paired_steps);
  EXPECT_FALSE(engine.paired_steps->median_log_ratio[1]);
  EXPECT_TRUE(std::isinf(read.runs[0].entries[0].rounds.interval.high));  // written as null
  EXPECT_EQ(read.runs[0].entries[2].status, EntryStatus::kSkipped);
  EXPECT_EQ(read.runs[0].seed, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(read.ab["job"], "pr-1");
  ASSERT_EQ(read.runs[0].aggregates.size(), 1u);
  EXPECT_EQ(read.runs[0].aggregates[0].devices, (std::vector<int>{0, 1}));
}

TEST(ReportReader, FieldsAddedWithinTheSchemaVersionMayBeAbsent) {
  EXPECT_EQ(
      error_of([](json& d) {
        for (json& e : d["runs"][0]["results"]) {
          for (const char* key : {"paired_steps", "engine", "raw_samples", "noise", "cpu_s"}) {
            e.erase(key);
          }
        }
        d["runs"][0].erase("host_canary");
        d.erase("interrupted");
      }),
      "");
  json doc = report_to_json(full_report());
  doc["runs"][0]["results"][0]["caller_blocked_s"] = nullptr;
  EXPECT_EQ(read_report(doc, "r.json").runs[0].entries[0].caller_blocked.count, 0);
}

TEST(ReportReader, NamesThePlaceOfWhatIsMissingOrMistyped) {
  const auto results = [](json& d) -> json& { return d["runs"][0]["results"]; };
  EXPECT_EQ(error_of([](json& d) { d["schema_version"] = 1; })
                .find("r.json: /schema_version: "
                      "schema version 1"),
            0u);
  EXPECT_NE(error_of([](json& d) { d["context"].erase("host"); }).find("/context/host: missing"),
            std::string::npos);
  EXPECT_NE(error_of([&](json& d) {
              results(d)[1]["status"] = "fine";
            }).find("/runs/0/results/1/status: expected ok, skipped, failed or"),
            std::string::npos);
  EXPECT_NE(error_of([&](json& d) {
              results(d)[1].erase("interval_s");
            }).find("/runs/0/results/1/interval_s: missing"),
            std::string::npos);
  // Not needed of a case that failed, but refused when there and of the wrong type.
  EXPECT_EQ(error_of([&](json& d) { results(d)[3].erase("interval_s"); }), "");
  EXPECT_NE(error_of([&](json& d) {
              results(d)[3]["warmup"] = "five";
            }).find("/runs/0/results/3/warmup: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of([&](json& d) {
              results(d)[1]["raw_samples"]["round"] = {0, 1};
            }).find("/runs/0/results/1/raw_samples: wall_s and round must be arrays of one length"),
            std::string::npos);
  EXPECT_NE(error_of([&](json& d) {
              results(d)[1]["raw_samples"]["cpu_s"][2] = "x";
            }).find("/raw_samples/cpu_s/2: expected a number"),
            std::string::npos);
  EXPECT_NE(error_of([&](json& d) {
              results(d)[1]["rounds"]["process"][1] = int64_t{1} << 40;
            }).find("/rounds/process/1: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of([](json& d) {
              d["runs"][0]["notes"] = "none";
            }).find("/runs/0/notes: expected an array"),
            std::string::npos);
}

TEST(ReportReader, FilesThatAreNotReports) {
  TempDir dir;
  const auto error = [](const std::string& path) {
    try {
      read_report(path);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(dir / "missing.json").find("missing.json: cannot open: no such file"),
            std::string::npos);
  // Checked as a config is (files.h): a pipe would block the reader until something wrote to it.
  ASSERT_EQ(mkfifo((dir / "pipe.json").c_str(), 0600), 0);
  EXPECT_NE(error(dir / "pipe.json").find("pipe.json: cannot open: not a regular file"),
            std::string::npos);
  std::ofstream(dir / "cut.json") << "{\"schema_version\": 2,";
  EXPECT_NE(error(dir / "cut.json").find("not valid JSON"), std::string::npos);
  std::ofstream(dir / "nul.json") << std::string("{\"schema_version\": \0}", 21);
  EXPECT_NE(error(dir / "nul.json").find("nul.json: a NUL byte at line 1, column 20"),
            std::string::npos);
  std::ofstream(dir / "list.json") << "[1, 2]";
  EXPECT_NE(error(dir / "list.json").find("expected a JSON object"), std::string::npos);
  std::ofstream(dir / "r.json") << report_to_json(full_report()).dump();
  EXPECT_EQ(read_report(dir / "r.json").runs.size(), 1u);
}

}  // namespace
}  // namespace mtc::bench
