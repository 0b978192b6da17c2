#include "runner/commands/processes.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>

#include "report/report_reader.h"
#include "report/reporter.h"

namespace mtc::bench {
namespace {

using json = nlohmann::json;
using Strings = std::vector<std::string>;

TEST(Processes, ChildArgumentsDropWhatTheParentHandles) {
  const Strings parent{"mtc-bench", "--config",      "streampetr", "--processes",
                       "3",         "--json",        "out.json",   "--md=out.md",
                       "-q",        "--raw-samples", "--strategy", "to,engine"};
  EXPECT_EQ(child_arguments(parent, 2, 3, "/tmp/x/2.json"),
            (Strings{"mtc-bench", "--config", "streampetr", "--strategy", "to,engine", "--quiet",
                     "--raw-samples", "--child-index", "2", "--child-count", "3", "--json",
                     "/tmp/x/2.json"}));
}

// A flag takes no value: the argument after a dropped flag is the next option, kept.
TEST(Processes, ChildArgumentsKeepWhatFollowsADroppedFlag) {
  const Strings parent{"mtc-bench", "--strategy", "to,engine", "--quiet",   "--json",
                       "out.json",  "-q",         "--config",  "streampetr"};
  EXPECT_EQ(child_arguments(parent, 0, 2, "/tmp/x/0.json"),
            (Strings{"mtc-bench", "--strategy", "to,engine", "--config", "streampetr", "--quiet",
                     "--raw-samples", "--child-index", "0", "--child-count", "2", "--json",
                     "/tmp/x/0.json"}));
}

// A child's report of one run of two cases (rounds of samples of `to` and of `engine`), as the
// parent reads back what the child wrote with --raw-samples; `edit` changes it before writing.
Report child_report(const std::vector<std::vector<double>>& rounds_of_to,
                    const std::vector<std::vector<double>>& rounds_of_engine,
                    const std::function<void(Report&)>& edit = {}) {
  const auto entry = [](const std::string& strategy,
                        const std::vector<std::vector<double>>& rounds) {
    Entry e;
    e.direction = "h2h";
    e.strategy = strategy;
    e.pattern = "hot";
    e.source = e.target = "cpu";
    e.verified = true;
    e.stop_reason = "max_rounds";
    e.warmup = 2;
    e.measure_time_s = 1.0;
    json raw{
        {"round", json::array()}, {"wall_s", json::array()}, {"caller_blocked_s", json::array()},
        {"cpu_s", json::array()}, {"gpu_s", nullptr},        {"exposed_s", nullptr}};
    std::vector<Round> measured;
    for (size_t r = 0; r < rounds.size(); ++r) {
      measured.push_back(Round{rounds[r], 0});
      for (double v : rounds[r]) {
        raw["round"].push_back(r);
        raw["wall_s"].push_back(v);
        raw["caller_blocked_s"].push_back(v / 10);
        raw["cpu_s"].push_back(v);
      }
    }
    e.rounds = summarize_rounds(measured);
    e.wall = summarize(raw["wall_s"].get<std::vector<double>>());
    e.raw_samples = raw;
    return e;
  };
  Report report;
  report.context = {
      {"host", "h"}, {"date", "2026-11-25T00:00:00Z"}, {"host_state", {{"busy", false}}}};
  RunSection run;
  run.config_file = "c.json";
  run.config_name = "c";
  run.settings = {{"interval_level", 0.95}};
  run.workload_hash = "0123456789abcdef";
  run.tensors = 10;
  run.bytes = 1000;
  run.entries = {entry("to", rounds_of_to), entry("engine", rounds_of_engine)};
  report.runs.push_back(run);
  if (edit) edit(report);
  return read_report(report_to_json(report), "process.json");
}

TEST(Processes, MergingPoolsTheRoundsAndLabelsTheirProcess) {
  const std::vector<Report> reports{child_report({{10, 10}, {11, 11}}, {{1, 1}, {1.1, 1.1}}),
                                    child_report({{20, 20}, {21, 21}}, {{2, 2}, {2.1, 2.1}})};
  const Report merged = merge_process_reports(reports, false);
  ASSERT_EQ(merged.runs.size(), 1u);
  const Entry& to = merged.runs[0].entries[0];
  EXPECT_EQ(to.rounds.rounds, 4);
  EXPECT_EQ(to.rounds.process, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(to.wall.count, 8);
  EXPECT_EQ(to.warmup, 4);
  EXPECT_DOUBLE_EQ(to.measure_time_s, 2.0);
  EXPECT_TRUE(to.raw_samples.is_null());
  // The two processes disagree by 2x: the interval must say so.
  EXPECT_LT(to.rounds.interval.low, 10.0);
  EXPECT_GT(to.rounds.interval.high, 21.0);
  // Paired per round across both processes: exactly 10x in every round.
  const Entry& engine = merged.runs[0].entries[1];
  ASSERT_TRUE(engine.speedup);
  EXPECT_NEAR(engine.speedup->estimate, 10.0, 1e-9);
  EXPECT_EQ(engine.speedup->pairs, 4);
  EXPECT_EQ(merged.context["host_state_by_process"].size(), 2u);
  EXPECT_EQ(merged.runs[0].settings["processes"], 2);
}

TEST(Processes, MergingKeepsThePairedStepsAlignedWithTheRounds) {
  const auto with_steps = [](std::string baseline, std::vector<std::optional<double>> ratios) {
    return [=](Report& r) { r.runs[0].entries[1].paired_steps = PairedSteps{baseline, ratios}; };
  };
  std::vector<Report> reports{child_report({{10, 10}, {11, 11}}, {{1, 1}, {1.1, 1.1}},
                                           with_steps("engine@base", {0.01, std::nullopt})),
                              child_report({{20, 20}, {21, 21}}, {{2, 2}, {2.1, 2.1}},
                                           with_steps("engine@base", {0.02, 0.03}))};
  const Report merged = merge_process_reports(reports, false);
  const Entry& engine = merged.runs[0].entries[1];
  ASSERT_TRUE(engine.paired_steps);
  EXPECT_EQ(engine.paired_steps->baseline, "engine@base");
  EXPECT_EQ(engine.paired_steps->median_log_ratio,
            (std::vector<std::optional<double>>{0.01, std::nullopt, 0.02, 0.03}));
  EXPECT_FALSE(merged.runs[0].entries[0].paired_steps);
  // A process without them (or against another baseline): none, rather than misaligned ones.
  reports[1] = child_report({{20, 20}, {21, 21}}, {{2, 2}, {2.1, 2.1}},
                            with_steps("engine@old", {0.02, 0.03}));
  EXPECT_FALSE(merge_process_reports(reports, false).runs[0].entries[1].paired_steps);
  reports[1] = child_report({{20, 20}, {21, 21}}, {{2, 2}, {2.1, 2.1}});
  EXPECT_FALSE(merge_process_reports(reports, false).runs[0].entries[1].paired_steps);
}

TEST(Processes, AFailureInOneProcessFailsTheCase) {
  const std::vector<Report> reports{child_report({{1}}, {{1}}),
                                    child_report({{1}}, {{1}}, [](Report& r) {
                                      r.runs[0].entries[1].status = EntryStatus::kFailed;
                                      r.runs[0].entries[1].reason = "out of memory";
                                    })};
  const Report merged = merge_process_reports(reports, true);
  const Entry& engine = merged.runs[0].entries[1];
  EXPECT_EQ(engine.status, EntryStatus::kFailed);
  EXPECT_EQ(engine.reason, "process 1: out of memory");
  EXPECT_EQ(merged.exit_code, 3);
  EXPECT_TRUE(merged.runs[0].entries[0].raw_samples.is_object());
}

// A process id that no process has: a child's, once it has ended and been waited for.
pid_t a_dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

TEST(Processes, AKilledParentsFolderIsRemovedByTheNextParentAndNothingElse) {
  std::string base = ::testing::TempDir() + "mtc-abandoned-XXXXXX";
  ASSERT_NE(mkdtemp(base.data()), nullptr);
  const std::string prefix = base + "/" + kProcessFolderPrefix;
  const pid_t dead = a_dead_pid();
  const std::string abandoned = fmt::format("{}{}-abc123", prefix, dead);
  const std::string alive = fmt::format("{}{}-abc123", prefix, getpid());
  const std::string old_form = prefix + "Xy12ab";
  const std::string not_a_folder = fmt::format("{}{}-def456", prefix, dead);
  for (const std::string& folder : {abandoned, alive, old_form}) {
    ASSERT_EQ(mkdir(folder.c_str(), 0700), 0) << folder;
    std::ofstream(folder + "/process-0.json") << "{}";
  }
  std::ofstream(not_a_folder) << "a file";

  EXPECT_EQ(remove_abandoned_process_folders(base), 1);
  EXPECT_FALSE(exists(abandoned)) << "its parent is gone";
  EXPECT_TRUE(exists(alive + "/process-0.json")) << "its parent runs";
  EXPECT_TRUE(exists(old_form)) << "no parent named";
  EXPECT_TRUE(exists(not_a_folder)) << "not a folder";
  EXPECT_EQ(remove_abandoned_process_folders(base + "/missing"), 0);

  for (const std::string& folder : {alive, old_form}) {
    std::remove((folder + "/process-0.json").c_str());
    rmdir(folder.c_str());
  }
  std::remove(not_a_folder.c_str());
  rmdir(base.c_str());
}

}  // namespace
}  // namespace mtc::bench
