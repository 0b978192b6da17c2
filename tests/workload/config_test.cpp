// load_config / parse_config / config_from_saved_batch: defaults, overrides, the given and
// resolved JSON.
#include "workload/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "test_support.h"
#include "workload/summary.h"
#include "workload/workload.h"

namespace mtc::bench {
namespace {

using testing::config_from_text;
using testing::TempDir;

TEST(Config, DefaultsFillEverythingNotGiven) {
  TempDir dir;
  const Config config = load_config(dir.write("my-workload.json", R"({"structure": null})"));
  EXPECT_EQ(config.name, "my-workload");  // the file's stem
  EXPECT_EQ(config.seed, 0u);
  EXPECT_EQ(config.directions, (std::vector<std::string>{"h2d", "d2h"}));
  const BenchSettings defaults;
  EXPECT_EQ(config.bench.warmup, defaults.warmup);
  EXPECT_EQ(config.bench.timeout_s, defaults.timeout_s);
  EXPECT_TRUE(config.bench.strategies.empty());
  EXPECT_EQ(config.given, nlohmann::json::parse(R"({"structure": null})"));
  EXPECT_EQ(config.resolved["name"], "my-workload");
  EXPECT_EQ(config.resolved["seed"], 0);
  EXPECT_EQ(config.resolved["directions"], nlohmann::json({"h2d", "d2h"}));
  EXPECT_EQ(config.resolved["bench"]["warmup"], 5);
  EXPECT_EQ(config.resolved["bench"]["noise_target"], 0.01);
  EXPECT_EQ(config.resolved["bench"]["patterns"], (nlohmann::json{"hot", "step"}));
  EXPECT_EQ(config.resolved["bench"]["inputs"], 8);
  EXPECT_EQ(config.resolved["bench"]["raw_samples"], false);
}

TEST(Config, EveryFieldIsRead) {
  const Config config = config_from_text(R"({
      "$schema": "./spec.schema.json", "name": "n", "description": "d", "seed": 18446744073709551615,
      "directions": ["d2d", "h2h"],
      "bench": {"warmup": 1, "min_samples": 2, "min_time_s": 0.25, "noise_target": 0.01, "timeout_s": 3,
                "strategies": ["per_tensor", "packed"], "devices": [0, 1], "overlap_us": 50,
                "raw_samples": true},
      "structure": 1})");
  EXPECT_EQ(config.name, "n");
  EXPECT_EQ(config.seed, 18446744073709551615u);
  EXPECT_EQ(config.directions, (std::vector<std::string>{"d2d", "h2h"}));
  EXPECT_EQ(config.bench.warmup, 1);
  EXPECT_EQ(config.bench.min_samples, 2);
  EXPECT_EQ(config.bench.min_time_s, 0.25);
  EXPECT_EQ(config.bench.noise_target, 0.01);
  EXPECT_EQ(config.bench.timeout_s, 3.0);
  EXPECT_EQ(config.bench.strategies, (std::vector<std::string>{"per_tensor", "packed"}));
  EXPECT_EQ(config.bench.devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(config.bench.overlap_us, 50.0);
  EXPECT_TRUE(config.bench.raw_samples);
}

TEST(Config, SetsOverrideParamsAndPointersAndShowInResolved) {
  const std::string text = R"({"params": {"samples": 4, "label": "a"}, "bench": {"warmup": 2},
      "structure": {"list": {"repeat": {"param": "samples"}, "item": {"param": "label"}}}})";
  const Config config = config_from_text(
      text, {"samples=6", "label=plain text", "/bench/warmup=20", "/bench/strategies=[\"packed\"]",
             "/directions=[\"h2d\"]", "/seed=9"});
  EXPECT_EQ(config.bench.warmup, 20);
  EXPECT_EQ(config.bench.strategies, (std::vector<std::string>{"packed"}));
  EXPECT_EQ(config.directions, (std::vector<std::string>{"h2d"}));
  EXPECT_EQ(config.seed, 9u);
  EXPECT_EQ(config.resolved["params"]["samples"], 6);
  EXPECT_EQ(config.resolved["params"]["label"], "plain text");
  EXPECT_EQ(config.given["params"]["samples"], 4);  // the file as written
  const c10::IValue data = build_workload(config, {});
  const auto items = data.toListRef();
  ASSERT_EQ(items.size(), 6u);
  EXPECT_EQ(items[0].toStringRef(), "plain text");
}

TEST(Config, SetCreatesMissingObjects) {
  const Config config = config_from_text(R"({"structure": 1})", {"/bench/overlap_us=12.5"});
  EXPECT_EQ(config.bench.overlap_us, 12.5);
}

TEST(Config, RelativeFilesResolveAgainstTheConfigDirectory) {
  TempDir dir;
  dir.make_directory("data");
  std::ifstream in(testing::fixture("npy/float32.npy"), std::ios::binary);
  dir.write("data/x.npy",
            std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  const Config config = load_config(dir.write("c.json", R"({"structure": {"npy": "data/x.npy"}})"));
  EXPECT_EQ(build_workload(config, {}).toTensor().numel(), 6);
}

TEST(Config, SavedBatchConfig) {
  const Config config =
      config_from_saved_batch(testing::fixture("pt/batch.pt"), {"/bench/warmup=1"});
  EXPECT_EQ(config.name, "batch");
  EXPECT_EQ(config.file, testing::fixture("pt/batch.pt"));
  EXPECT_EQ(config.bench.warmup, 1);
  EXPECT_EQ(config.directions, (std::vector<std::string>{"h2d", "d2h"}));
  const WorkloadSummary summary = summarize_workload(build_workload(config, {}));
  EXPECT_EQ(summary.tensors, 8);
  EXPECT_EQ(summary.passthrough, 6);
  testing::expect_config_error([] { config_from_saved_batch(testing::fixture("pt/missing.pt")); },
                               "/input", "no such file");
}

TEST(Config, InputEntryWithMemory) {
  const Config config =
      config_from_text(R"({"input": {"file": "pt/list.pt", "memory": "pinned"}})");
  BuildInfo info;
  const c10::IValue data = build_workload(config, {}, &info);
  EXPECT_EQ(data.toListRef().size(), 2u);
  EXPECT_EQ(info.demoted.at("pinned"), 2);
}

TEST(Config, CopiesShareTheCompiledWorkload) {
  const Config config =
      config_from_text(R"({"structure": {"tensor": {"dtype": "int8", "shape": [3]}}})");
  const Config copy = config;  // NOLINT(performance-unnecessary-copy-initialization): the point
  EXPECT_EQ(copy.workload, config.workload);
  EXPECT_TRUE(build_workload(copy, {}).toTensor().equal(build_workload(config, {}).toTensor()));
}

TEST(Config, DefaultConstructedConfigHasNoWorkload) {
  testing::expect_config_error([] { build_workload(Config{}, {}); }, "", "has no workload");
}

}  // namespace
}  // namespace mtc::bench
