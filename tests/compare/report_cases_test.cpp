#include "compare/report_cases.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compare/comparison.h"
#include "errors.h"
#include "fixtures.h"
#include "report/report_reader.h"

namespace mtc::bench::compare {
namespace {

using mtc::bench::testing_support::TempDir;
using testing_support::data;
using testing_support::edited;

std::string error_of(const std::string& path) {
  try {
    read_reports(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ReportCases, ReadsEveryCaseWithItsKey) {
  const ReportCases r = read_report_cases(data("base.json"));
  EXPECT_FALSE(r.ab);
  EXPECT_EQ(r.host, "gpu-host-a");
  EXPECT_EQ(r.day, "2026-11-20");
  ASSERT_EQ(r.cases.size(), 6u);  // 4 measured + 2 skipped
  const CaseRecord& engine = r.cases[1];
  EXPECT_EQ(engine.key, (CaseKey{"streampetr", "5bd2a0c4e1f39a77", "hot", "NVIDIA H100 80GB HBM3",
                                 "h2d", "engine", 0}));
  EXPECT_EQ(engine.status, "ok");
  EXPECT_DOUBLE_EQ(engine.wall.value, 2.5e-4);
  EXPECT_DOUBLE_EQ(engine.wall.low, 2.5e-4 / 1.01);
  ASSERT_TRUE(engine.wall.high);
  EXPECT_DOUBLE_EQ(*engine.wall.high, 2.5e-4 * 1.01);
  EXPECT_EQ(engine.wall.rounds, 6);
  ASSERT_TRUE(engine.speedup);
  EXPECT_DOUBLE_EQ(engine.speedup->value, 20.0);
  EXPECT_EQ(engine.file, data("base.json"));
  EXPECT_EQ(r.cases[4].status, "skipped");
  EXPECT_EQ(r.cases[4].reason, "needs two GPUs");
  EXPECT_EQ(case_label(engine.key), "streampetr hot h2d engine");
}

TEST(ReportCases, ReadsTheAbLabelAndNullBounds) {
  const ReportCases ab = read_report_cases(data("ab/candidate/round-3.json"));
  ASSERT_TRUE(ab.ab);
  EXPECT_EQ(ab.ab->job, "fixture-ab");
  EXPECT_EQ(ab.ab->side, "candidate");
  EXPECT_EQ(ab.ab->round, 3);
  const ReportCases one = read_report_cases(data("one-round.json"));
  EXPECT_FALSE(one.cases[0].wall.high);
  EXPECT_EQ(one.cases[0].wall.low, 0.0);
  EXPECT_EQ(one.cases[0].wall.rounds, 1);
}

TEST(ReportCases, FolderReadsEveryReportInNameOrder) {
  const auto reports = read_reports(data("ab/baseline"));
  ASSERT_EQ(reports.size(), 6u);
  for (size_t i = 0; i < reports.size(); ++i)
    EXPECT_EQ(reports[i].ab->round, static_cast<int64_t>(i));
  EXPECT_EQ(read_reports(data("ab")).size(), 12u);  // recursive
}

// `compare A B --json B/compare.json` writes into a compared folder: the next comparison of that
// folder skips compare's own output, where it took it for a damaged report before (exit 2). Only
// a comparison is skipped: anything else that is no report is still refused.
TEST(ReportCases, AFolderSkipsCompareOutputButNotOtherNonReports) {
  TempDir dir;
  const std::string folder = dir.make_dir("runs");
  std::ofstream(folder + "/a.json") << std::ifstream(data("base.json")).rdbuf();
  std::ofstream(folder + "/compare.json") << R"({"compare_version": 1, "cases": []})";
  EXPECT_EQ(read_reports(folder).size(), 1u);
  std::ofstream(folder + "/notes.json") << R"({"what": "not a report"})";
  EXPECT_THROW(read_reports(folder), ConfigError);
  const std::string only = dir.make_dir("only");
  std::ofstream(only + "/compare.json") << R"({"compare_version": 1})";
  EXPECT_NE(error_of(only).find("holds no .json report"), std::string::npos);
}

// A named pipe blocked the reader forever (it waits for a writer), as a device would never end:
// given as the report or found in a folder, it is refused before it is opened.
TEST(ReportCases, APipeIsRefusedUnread) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "pipe.json").c_str(), 0600), 0);
  EXPECT_NE(error_of(dir / "pipe.json").find("pipe.json: cannot open: not a regular file"),
            std::string::npos)
      << error_of(dir / "pipe.json");
  const std::string folder = dir.make_dir("runs");
  std::ofstream(folder + "/a.json") << std::ifstream(data("base.json")).rdbuf();
  ASSERT_EQ(mkfifo((folder + "/b.json").c_str(), 0600), 0);
  EXPECT_NE(error_of(folder).find("b.json: cannot open: not a regular file"), std::string::npos)
      << error_of(folder);
}

// Refused from its size alone, before a byte is read (the file is sparse: no disk is used).
TEST(ReportCases, AReportTooLargeIsRefusedUnread) {
  TempDir dir;
  const std::string path = dir / "big.json";
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kMaxReportBytes + 1)), 0);
  ::close(fd);
  EXPECT_NE(error_of(path).find("big.json: 1073741825 bytes is too large for a report (limit "
                                "1073741824)"),
            std::string::npos)
      << error_of(path);
}

// Two links of a folder to itself made the walk grow as 2^depth (it never ended); one link read
// each report once per level until the path was too long, then called it a case "in 41
// reports". Links are followed, each folder and file once; a report linked in from elsewhere is
// read, once however many links name it.
TEST(ReportCases, AFolderLinkedIntoItselfIsVisitedOnce) {
  TempDir dir;
  const std::string folder = dir.make_dir("runs");
  std::ofstream(folder + "/a.json") << std::ifstream(data("base.json")).rdbuf();
  ASSERT_EQ(symlink(folder.c_str(), (folder + "/self").c_str()), 0);
  ASSERT_EQ(symlink(folder.c_str(), (folder + "/again").c_str()), 0);
  ASSERT_EQ(symlink((folder + "/a.json").c_str(), (folder + "/latest.json").c_str()), 0);
  const std::string stored = dir.make_dir("stored");
  std::ofstream(stored + "/s.json") << std::ifstream(data("base.json")).rdbuf();
  ASSERT_EQ(symlink(stored.c_str(), (folder + "/baseline").c_str()), 0);
  const auto reports = read_reports(folder);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].path, folder + "/a.json");
  EXPECT_EQ(reports[1].path, folder + "/baseline/s.json");
}

// Each was read and compared before: +inf for a median of 1e308, a verdict from an interval that
// does not hold its median or from rounds that are not there, "sideways" listed as a case that
// matches nothing, and a report of no case compared as one "measured on" no device.
TEST(ReportCases, ADamagedMeasurementIsRefusedWithItsPlace) {
  TempDir dir;
  const auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
    return error_of(edited(dir, "r.json", "base.json", edit));
  };
  const auto engine = [](nlohmann::json& d) -> nlohmann::json& {
    return d["runs"][0]["results"][1];
  };
  using Edit = std::function<void(nlohmann::json&)>;
  const std::vector<std::pair<Edit, std::string>> damaged{
      {[&](auto& d) { engine(d)["wall_s"]["median"] = 1e308; },
       "r.json: /runs/0/results/1/wall_s/median: 1e+308 must be from 1e-12 to 1e+09"},
      {[&](auto& d) { engine(d)["interval_s"]["low"] = 3e-4; },
       "/runs/0/results/1/interval_s/low: 0.0003 is above the estimate it bounds, 0.00025"},
      {[&](auto& d) { engine(d)["interval_s"]["high"] = 2e-4; },
       "/runs/0/results/1/interval_s/high: 0.0002 is below the estimate it bounds"},
      {[&](auto& d) { engine(d)["speedup_vs_to"]["high"] = 2.0; },
       "/runs/0/results/1/speedup_vs_to/high: 2 is below the estimate it bounds"},
      {[&](auto& d) { engine(d)["rounds"]["median_s"][2] = 1e300; },
       "/runs/0/results/1/rounds/median_s/2: 1e+300 must be 0 or from"},
      {[&](auto& d) { engine(d)["rounds"]["count"] = 7; },
       "/runs/0/results/1/rounds/count: 7 rounds, but median_s lists 6"},
      {[&](auto& d) { engine(d)["direction"] = "sideways"; },
       "/runs/0/results/1/direction: expected h2d, d2h, d2d or h2h"},
      {[](auto& d) { d["runs"] = nlohmann::json::array(); },
       "r.json: /runs: no case, and the run was not interrupted"},
  };
  for (const auto& [edit, says] : damaged) {
    const std::string error = refused(edit);
    EXPECT_NE(error.find(says), std::string::npos) << "expected: " << says << "\ngot: " << error;
  }
  // What the writer leaves at the edges is read: an interval equal to its median (rounds that
  // agree exactly) and one a last bit off it.
  EXPECT_EQ(refused([&](auto& d) {
              engine(d)["interval_s"] = {{"low", 2.5e-4}, {"high", 2.5e-4}, {"level", 0.95}};
            }),
            "");
  EXPECT_EQ(refused([&](auto& d) { engine(d)["interval_s"]["low"] = std::nextafter(2.5e-4, 1.0); }),
            "");
}

// A run stopped before it measured anything (--processes, interrupted before any process ended)
// writes a report of no runs: read, and compared as that, not as a side measured on no device.
TEST(ReportCases, AReportInterruptedBeforeItMeasuredSaysSo) {
  TempDir dir;
  const std::string empty = edited(dir, "empty.json", "base.json", [](auto& d) {
    d["runs"] = nlohmann::json::array();
    d["interrupted"] = true;
  });
  ASSERT_TRUE(read_report_cases(empty).cases.empty());
  try {
    compare_reports(read_reports(empty), read_reports(data("base.json")), CompareOptions{});
    ADD_FAILURE() << "compared";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the baseline holds no case to compare: " + empty +
                                         " was interrupted before it measured anything"),
              std::string::npos)
        << e.what();
  }
}

TEST(ReportCases, RefusesOtherSchemaVersions) {
  const std::string e = error_of(data("v1.json"));
  EXPECT_NE(e.find("v1.json: /schema_version: schema version 1"), std::string::npos) << e;
  EXPECT_NE(e.find("reads version 2 only"), std::string::npos) << e;
}

TEST(ReportCases, NamesThePlaceOfABadField) {
  TempDir dir;
  const std::string no_hash =
      edited(dir, "a.json", "base.json", [](auto& d) { d["runs"][0]["workload"].erase("hash"); });
  EXPECT_NE(error_of(no_hash).find("/runs/0/workload/hash: missing"), std::string::npos)
      << error_of(no_hash);
  const std::string bad_median = edited(dir, "b.json", "base.json", [](auto& d) {
    d["runs"][0]["results"][2]["wall_s"]["median"] = "fast";
  });
  EXPECT_NE(error_of(bad_median).find("/runs/0/results/2/wall_s/median: expected a number"),
            std::string::npos);
  const std::string v1_speedup = edited(dir, "c.json", "base.json", [](auto& d) {
    d["runs"][0]["results"][1]["speedup_vs_to"] = 20.0;
  });
  EXPECT_NE(error_of(v1_speedup).find("a bare number is schema v1"), std::string::npos);
  const std::string no_gpu = edited(
      dir, "d.json", "base.json", [](auto& d) { d["context"]["gpus"] = nlohmann::json::array(); });
  EXPECT_NE(error_of(no_gpu).find("/runs/0/results/0/device: device 0 has no entry"),
            std::string::npos);
  const std::string bad_ab = edited(dir, "e.json", "base.json", [](auto& d) {
    d["ab"] = {{"job", "j"}, {"side", "x"}};
  });
  EXPECT_NE(error_of(bad_ab).find("/ab/round: missing"), std::string::npos);
}

TEST(ReportCases, ReadsPairedStepsAndRefusesMisalignedOnes) {
  TempDir dir;
  const auto with_steps = [](nlohmann::json steps) {
    return [steps](auto& d) { d["runs"][0]["results"][1]["paired_steps"] = steps; };
  };
  const nlohmann::json six = {0.01, nullptr, -0.02, 0.0, 0.03, 0.01};
  const ReportCases r = read_report_cases(
      edited(dir, "a.json", "base.json",
             with_steps({{"baseline", "engine@base"}, {"median_log_ratio", six}})));
  EXPECT_EQ(r.cases[1].paired_baseline, "engine@base");
  ASSERT_EQ(r.cases[1].paired_log_ratios.size(), 6u);
  EXPECT_FALSE(r.cases[1].paired_log_ratios[1]);
  EXPECT_DOUBLE_EQ(*r.cases[1].paired_log_ratios[2], -0.02);
  EXPECT_TRUE(r.cases[0].paired_log_ratios.empty());
  const std::string short_one =
      edited(dir, "b.json", "base.json",
             with_steps({{"baseline", "engine@base"}, {"median_log_ratio", {0.01}}}));
  EXPECT_NE(error_of(short_one).find("/runs/0/results/1/paired_steps/median_log_ratio: expected an "
                                     "array with one value per round"),
            std::string::npos)
      << error_of(short_one);
  nlohmann::json bad = six;
  bad[3] = "x";
  const std::string text =
      edited(dir, "c.json", "base.json",
             with_steps({{"baseline", "engine@base"}, {"median_log_ratio", bad}}));
  EXPECT_NE(error_of(text).find("median_log_ratio/3: expected a finite number or null"),
            std::string::npos)
      << error_of(text);
  const std::string no_base =
      edited(dir, "d.json", "base.json", with_steps({{"median_log_ratio", six}}));
  EXPECT_NE(error_of(no_base).find("paired_steps/baseline: missing"), std::string::npos)
      << error_of(no_base);
}

TEST(ReportCases, RefusesWhatIsNotAReport) {
  TempDir dir;
  std::ofstream(dir / "broken.json") << "{\"schema_version\": 2,";
  EXPECT_NE(error_of(dir / "broken.json").find("not valid JSON"), std::string::npos);
  std::ofstream(dir / "huge.json") << "{\"schema_version\": 2, \"exit_code\": 1e999}";
  EXPECT_NE(error_of(dir / "huge.json").find("not valid JSON"), std::string::npos);
  // Deep nesting is refused while reading, before a copy or a write of it could recurse that deep.
  std::ofstream(dir / "deep.json")
      << "{\"schema_version\": 2, \"context\": {\"x\": " << std::string(30000, '[')
      << std::string(30000, ']') << "}}";
  EXPECT_NE(error_of(dir / "deep.json").find("nested deeper than 512 levels"), std::string::npos)
      << error_of(dir / "deep.json");
  // At the bound: 512 levels (the report's object, "context" and 510 lists) are read, 513 not.
  auto nested = [&](const std::string& name, int lists) {
    std::ofstream(dir / name) << "{\"schema_version\": 2, \"context\": {\"x\": "
                              << std::string(lists, '[') << std::string(lists, ']') << "}}";
    return error_of(dir / name);
  };
  EXPECT_EQ(nested("512.json", 510).find("nested deeper"), std::string::npos)
      << nested("512.json", 510);
  EXPECT_NE(nested("513.json", 511).find("nested deeper than 512 levels"), std::string::npos)
      << nested("513.json", 511);
  // A value inside the 512th level is no level of its own.
  std::ofstream(dir / "full.json")
      << "{\"schema_version\": 2, \"context\": {\"x\": " << std::string(510, '[') << "1"
      << std::string(510, ']') << "}}";
  EXPECT_EQ(error_of(dir / "full.json").find("nested deeper"), std::string::npos)
      << error_of(dir / "full.json");
  EXPECT_NE(error_of(dir / "missing.json").find("no such file or folder"), std::string::npos);
  const std::string empty = dir.make_dir("empty");
  EXPECT_NE(error_of(empty).find("holds no .json report"), std::string::npos);
}

}  // namespace
}  // namespace mtc::bench::compare
