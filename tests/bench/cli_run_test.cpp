// The whole program through run_cli, as CI runs it on a machine without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"
#include "runner/commands/processes.h"
#include "runner/env/environment.h"
#include "temp_dir.h"

namespace mtc::bench {
namespace {

using testing_support::Ran;
using testing_support::run;
using testing_support::TempDir;

class CliRun : public testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "small.json") << R"({
      "name": "small", "seed": 1, "directions": ["h2d"],
      "params": {"samples": 2},
      "bench": {"warmup": 1, "min_samples": 3, "min_time_s": 0.0, "timeout_s": 0.5},
      "structure": {"list": {"repeat": {"param": "samples"}, "item": {"dict": {
        "boxes": {"tensor": {"dtype": "float32", "shape": [5, 4]}},
        "ids": {"tensor": {"dtype": "int64", "shape": [5]}}}}}}})";
    std::ofstream(dir_ / "broken.json")
        << R"({"name": "broken", "structure": {"tensor": {"dtype": "float99"}}})";
  }
  std::string path(const std::string& name) const { return dir_ / name; }
  TempDir dir_;
};

TEST_F(CliRun, RunsAndWritesReports) {
  const Ran r = run({"--config",
                     path("small.json"),
                     "--quiet",
                     "--strategy",
                     "to,engine,memcpy_batch",
                     "--pattern",
                     "hot",
                     "--min-rounds",
                     "2",
                     "--max-rounds",
                     "2",
                     "--round-time",
                     "0.001",
                     "--ab-label",
                     "job-1:baseline:3",
                     "--json",
                     path("r.json"),
                     "--md",
                     path("r.md"),
                     "--raw-samples"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("strategy"), std::string::npos) << r.out;
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(path("r.json")));
  EXPECT_EQ(doc["schema_version"], 2);
  EXPECT_EQ(doc["ab"]["job"], "job-1");
  EXPECT_EQ(doc["ab"]["side"], "baseline");
  EXPECT_EQ(doc["ab"]["round"], 3);
  EXPECT_EQ(doc["runs"][0]["workload"]["hash"].get<std::string>().size(), 16u);
  EXPECT_EQ(doc["runs"][0]["results"][0]["rounds"]["count"], 2);
  EXPECT_EQ(doc["runs"][0]["results"][0]["pattern"], "hot");
  EXPECT_EQ(doc["exit_code"], 0);
  EXPECT_EQ(doc["interrupted"], false);
  const auto& run0 = doc["runs"][0];
  EXPECT_EQ(run0["config"]["name"], "small");
  EXPECT_EQ(run0["workload"]["tensors"], 4);
  EXPECT_EQ(run0["settings"]["warmup"], 1);
  ASSERT_EQ(run0["results"].size(), 3u);
  EXPECT_EQ(run0["results"][0]["strategy"], "to");  // catalog order, whatever the order asked
  EXPECT_EQ(run0["results"][1]["strategy"], "memcpy_batch");
  EXPECT_EQ(run0["results"][2]["strategy"], "engine");
  EXPECT_EQ(run0["results"][0]["status"], "ok");
  EXPECT_TRUE(run0["results"][0]["raw_samples"]["wall_s"].is_array());
  if (cuda_device_count() == 0) {
    EXPECT_NE(r.err.find("no CUDA device: running the h2h (CPU->CPU) direction only"),
              std::string::npos);
    EXPECT_EQ(run0["results"][0]["direction"], "h2h");
    EXPECT_EQ(run0["results"][1]["status"], "skipped");
    EXPECT_EQ(run0["results"][2]["status"], "ok");
  }
  std::stringstream md;
  md << std::ifstream(path("r.md")).rdbuf();
  EXPECT_NE(md.str().find("| to |"), std::string::npos) << md.str();
}

TEST_F(CliRun, SweepsRunOncePerPoint) {
  const Ran r = run({"--config", path("small.json"), "--quiet", "--strategy", "to", "--sweep",
                     "samples=1,3", "--json", path("s.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(path("s.json")));
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["sweep_point"]["samples"], "1");
  EXPECT_EQ(doc["runs"][0]["workload"]["tensors"], 2);
  EXPECT_EQ(doc["runs"][1]["workload"]["tensors"], 6);
}

// Refused in the words of --sweep: the message named `--set 'nope=1'`, an option never given.
TEST_F(CliRun, ASweepOfAnUndeclaredParameterIsRefusedAsASweep) {
  const Ran r = run({"--config", path("small.json"), "--quiet", "--sweep", "nope=1,2"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--sweep nope: unknown parameter 'nope'; declared in \"params\": samples"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--set"), std::string::npos) << r.err;
}

TEST_F(CliRun, ConfigErrorsExitTwo) {
  EXPECT_EQ(run({"--config", path("missing.json")}).code, 2);
  const Ran broken = run({"--config", path("broken.json")});
  EXPECT_EQ(broken.code, 2);
  EXPECT_NE(broken.err.find("broken.json"), std::string::npos) << broken.err;
  EXPECT_EQ(run({"--config", path("small.json"), "--set", "nosuchparam=3"}).code, 2);
  EXPECT_EQ(run({"--config", path("small.json"), "--json", path("no/such/dir/r.json")}).code, 2);
}

// A GPU direction asked for on a machine without a GPU ends the run before it starts, with one
// line and no report, instead of measuring CPU->CPU copies under the name of the run.
TEST_F(CliRun, AGpuDirectionWithoutAGpuExitsTwo) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  const Ran r = run({"--config", path("small.json"), "--quiet", "--direction", "h2d", "--json",
                     path("gpu.json")});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--direction h2d: needs a CUDA device"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("gpu.json")));
}

// CPUs the process may not use were dropped by the kernel while the report named them.
TEST_F(CliRun, PinningToCpusTheProcessMayNotUseExitsTwo) {
  const Ran r = run({"--config", path("small.json"), "--quiet", "--pin-cpu", "0,1000"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--pin-cpu 0,1000: CPU 1000 not available to this process"),
            std::string::npos)
      << r.err;
}

// With --processes the parent checks the list before any child starts: each child refused it
// before, and the parent added "process 0 rejected its input" after the child's own line.
TEST_F(CliRun, PinningToCpusTheProcessMayNotUseIsRefusedByTheParentOfProcesses) {
  set_executable_for_children(MTC_BENCH_EXE);
  const Ran r =
      run({"--config", path("small.json"), "--quiet", "--processes", "2", "--pin-cpu", "0,1000"});
  set_executable_for_children("");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--pin-cpu 0,1000: CPU 1000 not available to this process"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("process 0"), std::string::npos) << "no child should have started:\n"
                                                        << r.err;
}

TEST_F(CliRun, Validate) {
  const Ran ok = run({"validate", path("small.json")});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("ok: "), std::string::npos);
  EXPECT_EQ(run({"validate", path("small.json"), path("broken.json")}).code, 2);
  // `validate configs/*.json` meets the configs' schema, which is no config: skipped, not failed.
  std::ofstream(path("spec.schema.json"))
      << R"({"$id": "https://mtc-bench.invalid/configs/spec.schema.json", "type": "object"})";
  const Ran with_schema = run({"validate", path("small.json"), path("spec.schema.json")});
  EXPECT_EQ(with_schema.code, 0) << with_schema.err;
  EXPECT_NE(with_schema.out.find("skipped: "), std::string::npos) << with_schema.out;
}

TEST_F(CliRun, ListShowsStrategiesAndShippedConfigs) {
  const Ran r = run({"list"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("engine_no_thread"), std::string::npos);
  // The columns are as wide as their longest entry: the longest name is still followed by a space.
  EXPECT_NE(r.out.find("engine_pinned_out d2h "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("streampetr.json"), std::string::npos) << r.out;
}

TEST_F(CliRun, HelpExitsZero) {
  const Ran r = run({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

}  // namespace
}  // namespace mtc::bench
