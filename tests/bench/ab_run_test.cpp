// The in-process A/B through the whole program, as CI runs it without a GPU (h2h): this build's
// engine and the same tree's engine loaded as a library, sampled alternately in one run, then
// `compare REPORT` pairs them by round.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cli_runner.h"
#include "temp_dir.h"

namespace mtc::bench {
namespace {

using testing_support::Ran;
using testing_support::run;
using testing_support::TempDir;

class AbRun : public testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "small.json") << R"({
      "name": "small", "seed": 3, "directions": ["h2h"],
      "bench": {"warmup": 1, "min_samples": 3, "min_time_s": 0.0, "timeout_s": 2, "inputs": 2},
      "structure": {"list": {"repeat": 3, "item": {"dict": {
        "boxes": {"tensor": {"dtype": "float32", "shape": [5, 4]}},
        "ids": {"tensor": {"dtype": "int64", "shape": [5]}}}}}}})";
  }
  std::string path(const std::string& name) const { return dir_ / name; }
  Ran run_ab(const std::vector<std::string>& extra) {
    std::vector<std::string> args{
        "--config", path("small.json"), "--quiet", "--direction",  "h2h",  "--pattern",
        "hot,step", "--gap-mode",       "sleep",   "--gap-us",     "50",   "--min-rounds",
        "3",        "--max-rounds",     "3",       "--round-time", "0.002"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  TempDir dir_;
};

// Views, not `const std::string&`: GCC 13 reads a reference returned from a call that bound
// temporaries to reference parameters as possibly dangling (-Wdangling-reference).
const nlohmann::json& entry(const nlohmann::json& results, std::string_view strategy,
                            std::string_view pattern) {
  for (const auto& e : results) {
    if (e["strategy"].get<std::string>() == strategy && e["pattern"].get<std::string>() == pattern)
      return e;
  }
  throw std::runtime_error("no entry " + std::string(strategy) + " " + std::string(pattern));
}

TEST_F(AbRun, MeasuresBothBuildsRoundByRoundAndComparesThem) {
  const Ran r = run_ab({"--strategy", "to,engine,engine@base", "--engine-lib",
                        std::string("base=") + MTC_TEST_ENGINE_PLUGIN, "--json", path("r.json")});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(path("r.json")));
  const auto& run0 = doc["runs"][0];
  EXPECT_EQ(run0["settings"]["strategies"], nlohmann::json({"to", "engine", "engine@base"}));
  EXPECT_EQ(run0["settings"]["engine_libraries"]["base"], MTC_TEST_ENGINE_PLUGIN);
  for (const std::string pattern : {"hot", "step"}) {
    const auto& linked = entry(run0["results"], "engine", pattern);
    const auto& loaded = entry(run0["results"], "engine@base", pattern);
    EXPECT_EQ(loaded["status"], "ok") << loaded.dump();
    EXPECT_TRUE(loaded["verified"].get<bool>());
    // Rounds taken together: one count, one process each.
    EXPECT_EQ(linked["rounds"]["count"], 3);
    EXPECT_EQ(loaded["rounds"]["count"], 3);
    EXPECT_EQ(linked["rounds"]["process"], loaded["rounds"]["process"]);
    EXPECT_EQ(loaded["engine"]["revision"],
              run0["settings"]["engine_revisions"]["@base"]["revision"]);
    EXPECT_EQ(linked["engine"]["revision"], run0["settings"]["engine_revisions"]["engine"]);
  }

  const Ran c = run({"compare", path("r.json"), "--fail-on", "none", "--json", path("c.json")});
  ASSERT_EQ(c.code, 0) << c.err << c.out;
  EXPECT_NE(c.out.find("engine vs engine@base"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("could see"), std::string::npos) << c.out;
  const nlohmann::json cmp = nlohmann::json::parse(std::ifstream(path("c.json")));
  EXPECT_EQ(cmp["method"], "in_process");
  EXPECT_DOUBLE_EQ(cmp["thresholds"]["wall"].get<double>(), 0.02);
  ASSERT_EQ(cmp["cases"].size(), 2u);  // hot and step; `to` is context only
  for (const auto& k : cmp["cases"]) {
    EXPECT_EQ(k["strategy"], "engine");
    EXPECT_EQ(k["baseline_strategy"], "engine@base");
    EXPECT_EQ(k["rounds"], 3);
  }
}

TEST_F(AbRun, BothSidesLoadedPairTheCandidateWithTheBaseline) {
  // The same build under two names: an A/A job with both sides loaded alike.
  std::ifstream in(MTC_TEST_ENGINE_PLUGIN, std::ios::binary);
  std::ofstream(path("cand.so"), std::ios::binary) << in.rdbuf();
  const Ran r = run_ab({"--strategy", "engine,engine@cand,engine@base", "--engine-lib",
                        std::string("base=") + MTC_TEST_ENGINE_PLUGIN, "--engine-lib",
                        "cand=" + path("cand.so"), "--round-cpus", "1", "--json", path("r.json")});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(path("r.json")));
  EXPECT_EQ(doc["runs"][0]["settings"]["strategies"],
            nlohmann::json({"engine", "engine@cand", "engine@base"}));
  // Every round on one CPU drawn for it: the run says so, and confining did not fail.
  EXPECT_EQ(doc["runs"][0]["settings"]["round_cpus"], 1);
  EXPECT_EQ(doc.dump().find("--round-cpus 1:"), std::string::npos) << doc.dump();
  // The candidate carries one per-step figure per round against the baseline; nothing else does.
  for (const std::string pattern : {"hot", "step"}) {
    const auto& cand = entry(doc["runs"][0]["results"], "engine@cand", pattern);
    ASSERT_TRUE(cand.contains("paired_steps")) << cand.dump();
    EXPECT_EQ(cand["paired_steps"]["baseline"], "engine@base");
    ASSERT_EQ(cand["paired_steps"]["median_log_ratio"].size(), 3u);
    for (const auto& ratio : cand["paired_steps"]["median_log_ratio"])
      EXPECT_TRUE(ratio.is_number()) << ratio;
    EXPECT_FALSE(entry(doc["runs"][0]["results"], "engine@base", pattern).contains("paired_steps"));
    EXPECT_FALSE(entry(doc["runs"][0]["results"], "engine", pattern).contains("paired_steps"));
  }
  const Ran c = run({"compare", path("r.json"), "--fail-on", "none", "--json", path("c.json")});
  ASSERT_EQ(c.code, 0) << c.err << c.out;
  const nlohmann::json cmp = nlohmann::json::parse(std::ifstream(path("c.json")));
  ASSERT_EQ(cmp["cases"].size(), 2u);
  for (const auto& k : cmp["cases"]) EXPECT_EQ(k["strategy"], "engine@cand");

  const Ran same = run_ab({"--strategy", "engine@cand,engine@base", "--engine-lib",
                           std::string("base=") + MTC_TEST_ENGINE_PLUGIN, "--engine-lib",
                           std::string("cand=") + MTC_TEST_ENGINE_PLUGIN});
  EXPECT_EQ(same.code, 2);
  EXPECT_NE(same.err.find("the same file as --engine-lib"), std::string::npos) << same.err;
}

TEST_F(AbRun, ABadSecondBuildIsAUsageError) {
  const Ran missing =
      run_ab({"--strategy", "engine,engine@base", "--engine-lib", "base=" + path("none.so")});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("--engine-lib base=" + path("none.so") + ": cannot load it"),
            std::string::npos)
      << missing.err;
  const Ran wrong = run_ab({"--strategy", "engine,engine@base", "--engine-lib",
                            std::string("base=") + MTC_TEST_FAKE_ENGINE_PLUGIN});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.err.find("plugin interface"), std::string::npos) << wrong.err;
  const Ran unloaded = run_ab({"--strategy", "engine,engine@other"});
  EXPECT_EQ(unloaded.code, 2);
  EXPECT_NE(unloaded.err.find("give --engine-lib other=PATH"), std::string::npos) << unloaded.err;
  const Ran malformed = run_ab({"--engine-lib", "base"});
  EXPECT_EQ(malformed.code, 2);
  EXPECT_NE(malformed.err.find("expected LABEL=PATH"), std::string::npos) << malformed.err;
}

TEST_F(AbRun, CompareOfAReportWithoutPairsIsAUsageError) {
  ASSERT_EQ(run_ab({"--strategy", "to,engine", "--json", path("plain.json")}).code, 0);
  const Ran c = run({"compare", path("plain.json")});
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.err.find("no A/B pair"), std::string::npos) << c.err;
}

}  // namespace
}  // namespace mtc::bench
