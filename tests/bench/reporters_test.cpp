#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "errors.h"
#include "report/file_reporter.h"
#include "report/reporter.h"
#include "report/table.h"
#include "report_support.h"
#include "temp_dir.h"

namespace mtc::bench {
namespace {

using json = nlohmann::json;
using testing_support::ok_entry;
using testing_support::sample_report;
using testing_support::summary_of;
using testing_support::TempDir;

// What a reporter of type R writes of a finished report.
template <class R>
std::string written(const Report& report) {
  std::ostringstream out;
  R reporter(out);
  write_report(reporter, report);
  return out.str();
}

bool has_non_finite(const json& j) {
  if (j.is_number_float()) return !std::isfinite(j.get<double>());
  if (j.is_structured()) {
    for (const auto& child : j) {
      if (has_non_finite(child)) return true;
    }
  }
  return false;
}

TEST(Report, SpeedupIsAgainstToOfTheSameDeviceDirectionAndPattern) {
  const Report r = sample_report();
  const auto& entries = r.runs[0].entries;
  EXPECT_DOUBLE_EQ(entries[0].speedup->estimate, 1.0);
  EXPECT_NEAR(entries[1].speedup->estimate, 6.5e-3 / 1.3e-4, 1e-9);
  EXPECT_NEAR(*entries[1].speedup->low, 50.0, 1e-9);
  EXPECT_EQ(entries[1].speedup->pairs, 3);
  EXPECT_FALSE(entries[2].speedup);  // skipped
  EXPECT_FALSE(entries[3].speedup);  // failed verification
}

TEST(Report, NoSpeedupWithoutTheBaseline) {
  RunSection run;
  run.entries.push_back(ok_entry("engine", 1e-4));
  run.entries.push_back(ok_entry("to", 1e-2));
  run.entries.back().pattern = "step";  // another pattern's baseline does not count
  compute_speedups(run);
  EXPECT_FALSE(run.entries[0].speedup);
}

TEST(Report, WorkloadHashIdentifiesConfigAndSeed) {
  const json a = {{"name", "x"}, {"params", {{"samples", 16}}}};
  const json b = {{"params", {{"samples", 16}}}, {"name", "x"}};  // same, keys in another order
  EXPECT_EQ(workload_hash(a, 0), workload_hash(b, 0));
  EXPECT_EQ(workload_hash(a, 0).size(), 16u);
  EXPECT_NE(workload_hash(a, 0), workload_hash(a, 1));
  EXPECT_NE(workload_hash(a, 0), workload_hash({{"name", "x"}, {"params", {{"samples", 17}}}}, 0));
}

TEST(Report, AggregatesSumOverGpus) {
  RunSection run;
  run.entries.push_back(ok_entry("engine", 1e-3, 0));
  run.entries.push_back(ok_entry("engine", 2e-3, 1));
  run.entries.push_back(ok_entry("to", 1e-2, 0));
  compute_aggregates(run);
  ASSERT_EQ(run.aggregates.size(), 1u);
  const Aggregate& a = run.aggregates[0];
  EXPECT_EQ(a.strategy, "engine");
  EXPECT_EQ(a.devices, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(a.tensors_per_s, 528.0 / 1e-3 + 528.0 / 2e-3);
  EXPECT_DOUBLE_EQ(a.slowest_median_s, 2e-3);
}

TEST(Report, StatusNamesReadBack) {
  for (const EntryStatus status : {EntryStatus::kOk, EntryStatus::kSkipped, EntryStatus::kFailed,
                                   EntryStatus::kVerificationFailed}) {
    EXPECT_EQ(parse_entry_status(to_string(status)), status);
  }
  EXPECT_FALSE(parse_entry_status("fine"));
  EXPECT_FALSE(parse_entry_status(""));
}

TEST(Report, ExitCodes) {
  Report r = sample_report();
  EXPECT_EQ(exit_code_for(r), 4);  // verification failure wins
  r.runs[0].entries[3].status = EntryStatus::kFailed;
  EXPECT_EQ(exit_code_for(r), 3);
  r.runs[0].entries[3].status = EntryStatus::kOk;
  EXPECT_EQ(exit_code_for(r), 0);  // skipped entries are fine
}

TEST(JsonReporter, WritesValidJsonWithSchemaVersionAndContext) {
  const json doc = json::parse(written<JsonReporter>(sample_report()));
  EXPECT_EQ(doc["schema_version"], kReportSchemaVersion);
  EXPECT_EQ(doc["context"]["tool"]["git_revision"], "abc1234");
  EXPECT_EQ(doc["exit_code"], 4);
  const json& results = doc["runs"][0]["results"];
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[1]["strategy"], "engine");
  EXPECT_EQ(results[1]["status"], "ok");
  EXPECT_DOUBLE_EQ(results[1]["wall_s"]["median"].get<double>(), 1.3e-4);
  EXPECT_NEAR(results[1]["speedup_vs_to"]["estimate"].get<double>(), 50.0, 1e-9);
  EXPECT_EQ(results[1]["speedup_vs_to"]["rounds"], 3);
  EXPECT_EQ(results[1]["pattern"], "hot");
  EXPECT_EQ(results[1]["rounds"]["count"], 3);
  EXPECT_EQ(results[1]["rounds"]["median_s"].size(), 3u);
  EXPECT_DOUBLE_EQ(results[1]["interval_s"]["low"].get<double>(), 1.3e-4 * 0.95);
  EXPECT_DOUBLE_EQ(results[1]["noise"]["reported"].get<double>(), 0.004);
  EXPECT_EQ(results[2]["status"], "skipped");
  EXPECT_FALSE(results[2].contains("wall_s"));
  EXPECT_EQ(results[3]["status"], "verification_failed");
  EXPECT_EQ(results[3]["verified"], false);
  EXPECT_TRUE(results[3]["speedup_vs_to"].is_null());
  EXPECT_EQ(doc["runs"][0]["workload"]["bytes"], 153628);
}

TEST(JsonReporter, NeverWritesNanOrInfinity) {
  Report r = sample_report();
  Entry& e = r.runs[0].entries[0];
  e.wall.median = std::numeric_limits<double>::quiet_NaN();
  e.gb_per_s = std::numeric_limits<double>::infinity();
  e.speedup =
      RatioEstimate{-std::numeric_limits<double>::infinity(), std::nullopt, std::nullopt, 0.95, 1};
  e.rounds.interval.high = std::numeric_limits<double>::infinity();
  r.runs[0].settings = {{"x", std::numeric_limits<double>::quiet_NaN()}};
  const json doc = report_to_json(r);
  EXPECT_FALSE(has_non_finite(doc));
  const std::string text = written<JsonReporter>(r);
  EXPECT_EQ(text.find("NaN"), std::string::npos);
  EXPECT_EQ(text.find("Infinity"), std::string::npos);
  const json reparsed = json::parse(text);
  EXPECT_TRUE(reparsed["runs"][0]["results"][0]["wall_s"]["median"].is_null());
  EXPECT_TRUE(reparsed["runs"][0]["results"][0]["interval_s"]["high"].is_null());
}

TEST(JsonReporter, RawSamplesOnlyWhenAsked) {
  Report r = sample_report();
  EXPECT_FALSE(report_to_json(r)["runs"][0]["results"][0].contains("raw_samples"));
  r.runs[0].entries[0].raw_samples = {{"wall_s", {1e-3, 2e-3}}};
  EXPECT_EQ(report_to_json(r)["runs"][0]["results"][0]["raw_samples"]["wall_s"].size(), 2u);
}

TEST(ConsoleReporter, ShowsTheTable) {
  const std::string text = written<ConsoleReporter>(sample_report());
  for (const char* needle : {"NVIDIA H100 80GB HBM3",
                             "strategy",
                             "direction",
                             "median",
                             "p90",
                             "noise",
                             "GB/s",
                             "speedup",
                             "verified",
                             "engine",
                             "6.50 ms",
                             "130 us",
                             "50.0x (50.0-50.0)",
                             "pattern",
                             "hot",
                             "124 us - 136 us",
                             "rounds",
                             "0.40 %",
                             "NO",
                             "needs a driver",
                             "note: d2d skipped",
                             "528 tensors"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
}

TEST(MarkdownReporter, ShowsTheSameTable) {
  const std::string text = written<MarkdownReporter>(sample_report());
  EXPECT_NE(text.find("| strategy | direction | pattern | median | interval |"), std::string::npos)
      << text;
  EXPECT_NE(text.find("| engine | h2d | hot | 130 us | 124 us - 136 us |"), std::string::npos)
      << text;
  EXPECT_NE(text.find("---: |"), std::string::npos);
  EXPECT_NE(text.find("abc1234"), std::string::npos);
}

// A report read back from a file may hold anything in its context: fields of another type are
// shown as unknown, never an exception.
TEST(MarkdownReporter, ContextFieldsOfAnotherTypeShowAsUnknown) {
  Report r = sample_report();
  r.context["tool"] = 3;
  r.context["gpus"] = json::array({json{{"name", 1}}, "x"});
  r.context["cuda"] = json{{"driver_version", 13}, {"runtime_version", nullptr}};
  r.context["torch_version"] = json::array();
  std::string text;
  ASSERT_NO_THROW(text = written<MarkdownReporter>(r));
  EXPECT_NE(text.find("2 x GPU, driver ?, runtime ?, torch ?"), std::string::npos) << text;
  EXPECT_NE(text.find("mtc-bench ? (unknown)"), std::string::npos) << text;
  ASSERT_NO_THROW((void)written<ConsoleReporter>(r));
}

// Records the calls it gets, to see the lifecycle a multiplex drives.
class Recorder final : public Reporter {
 public:
  Recorder(std::string name, std::vector<std::string>& calls)
      : name_(std::move(name)), calls_(calls) {}
  void begin(const json& /*context*/) override { calls_.push_back(name_ + " begin"); }
  void run(const RunSection& run) override { calls_.push_back(name_ + " run " + run.config_name); }
  void end(const Report& /*report*/) override { calls_.push_back(name_ + " end"); }

 private:
  std::string name_;
  std::vector<std::string>& calls_;
};

TEST(Reporters, MultiplexDrivesEachReporterThroughTheLifecycleInOrder) {
  std::vector<std::string> calls;
  MultiplexReporter outputs;
  outputs.add(std::make_unique<Recorder>("a", calls));
  outputs.add(std::make_unique<Recorder>("b", calls));
  write_report(outputs, sample_report());
  EXPECT_EQ(calls, (std::vector<std::string>{"a begin", "b begin", "a run streampetr",
                                             "b run streampetr", "a end", "b end"}));
}

// An output that fails at the end (its folder went away) takes none of the others with it: they
// are written, and the failure comes out after them.
TEST(Reporters, MultiplexEndsEveryReporterWhenOneFails) {
  class Failing final : public Reporter {
   public:
    void end(const Report& /*report*/) override { throw std::runtime_error("rename failed"); }
  };
  std::vector<std::string> calls;
  MultiplexReporter outputs;
  outputs.add(std::make_unique<Failing>());
  outputs.add(std::make_unique<Recorder>("b", calls));
  EXPECT_THROW(write_report(outputs, sample_report()), std::runtime_error);
  EXPECT_EQ(calls, (std::vector<std::string>{"b begin", "b run streampetr", "b end"}));
}

TEST(ConsoleReporter, PrintsEachPartWhenItIsKnown) {
  Report report = sample_report();
  report.profile = true;
  std::ostringstream out;
  ConsoleReporter console(out);
  console.begin(report.context);
  EXPECT_EQ(out.str(), "NVIDIA H100 80GB HBM3, driver 13.0, runtime 13.0, torch 2.11.0\n");
  console.run(report.runs[0]);
  EXPECT_NE(out.str().find("streampetr: 528 tensors"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("profile mode"), std::string::npos);
  console.end(report);
  EXPECT_NE(out.str().find("\nprofile mode: fixed sample counts"), std::string::npos) << out.str();
  EXPECT_EQ(out.str(), written<ConsoleReporter>(report));
}

TEST(FileReporter, WritesTheFileWholeWhenTheReportEnds) {
  TempDir dir;
  const std::string path = dir / "r.json";
  const Report report = sample_report();
  auto file = FileReporter::to_file<JsonReporter>("--json", path);
  file->begin(report.context);
  file->run(report.runs[0]);
  EXPECT_FALSE(std::ifstream(path).good());
  file->end(report);
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  EXPECT_EQ(text.str(), written<JsonReporter>(report));
  EXPECT_THROW(FileReporter::to_file<MarkdownReporter>("--md", dir / "no/such/folder/r.md"),
               UsageError);
}

TEST(Table, DeviceColumnOnlyWithSeveralGpus) {
  RunSection run;
  run.entries.push_back(ok_entry("engine", 1e-3, 0));
  EXPECT_EQ(results_table(run).header.front(), "strategy");
  run.entries.push_back(ok_entry("engine", 1e-3, 1));
  EXPECT_EQ(results_table(run).header.front(), "device");
}

TEST(Table, ExposedColumnInOverlapMode) {
  RunSection run;
  run.entries.push_back(ok_entry("engine", 1e-3));
  run.entries[0].exposed = summary_of(2e-4);
  const Table t = results_table(run);
  EXPECT_NE(std::find(t.header.begin(), t.header.end(), "exposed"), t.header.end());
}

TEST(Table, Durations) {
  EXPECT_EQ(format_duration(812e-9), "812 ns");
  EXPECT_EQ(format_duration(81.2e-6), "81.2 us");
  EXPECT_EQ(format_duration(6.589e-3), "6.59 ms");
  EXPECT_EQ(format_duration(1.25), "1.25 s");
  EXPECT_EQ(format_duration(0.0), "-");
  EXPECT_EQ(format_duration(std::nan("")), "-");
  EXPECT_EQ(format_percent(0.0048), "0.48 %");
}

}  // namespace
}  // namespace mtc::bench
