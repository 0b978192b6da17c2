// Every config in configs/ loads, names the schema, builds, and stresses the regime it claims.
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "test_support.h"
#include "workload/config.h"
#include "workload/summary.h"
#include "workload/workload.h"

namespace mtc::bench {
namespace {

using testing::configs_dir;

std::vector<std::string> shipped_configs() {
  // readdir rather than std::filesystem::directory_iterator: see test_support.cpp on libtorch.
  std::vector<std::string> out;
  DIR* dir = ::opendir(configs_dir().c_str());
  if (dir == nullptr) return out;
  while (const dirent* entry = ::readdir(dir)) {
    const std::filesystem::path path = configs_dir() / entry->d_name;
    if (path.extension() == ".json" && path.filename() != "spec.schema.json")
      out.push_back(path.string());
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

WorkloadSummary summarize(const std::string& name, BuildInfo* info = nullptr) {
  const Config config = load_config((configs_dir() / name).string());
  BuildInfo local;
  const c10::IValue data = build_workload(config, {}, info ? info : &local);
  return summarize_workload(data, info ? *info : local);
}

TEST(ShippedConfigs, EveryOneLoadsNamesTheSchemaAndBuilds) {
  const auto configs = shipped_configs();
  EXPECT_GE(configs.size(), 5u);  // the flagship, its random variant and three regimes
  for (const auto& path : configs) {
    SCOPED_TRACE(path);
    const Config config = load_config(path);
    EXPECT_EQ(config.given.value("$schema", ""), "./spec.schema.json");
    EXPECT_TRUE(config.given.contains("name"));
    EXPECT_TRUE(config.given.contains("description"));
    EXPECT_GT(summarize_workload(build_workload(config, {})).tensors, 0);
  }
}

TEST(ShippedConfigs, TinyTensorsAreThousandsOfAtMost16Bytes) {
  const WorkloadSummary s = summarize("tiny-tensors.json");
  EXPECT_GE(s.tensors, 4000);
  EXPECT_LE(s.largest_bytes, 16);
  EXPECT_GE(s.smallest_bytes, 1);
  EXPECT_EQ(s.packable_tensors, s.tensors);
}

TEST(ShippedConfigs, LargeTensorsAre64Of4MiB) {
  const WorkloadSummary s = summarize("large-tensors.json");
  EXPECT_EQ(s.tensors, 64);
  EXPECT_EQ(s.smallest_bytes, 4 << 20);
  EXPECT_EQ(s.largest_bytes, 4 << 20);
  EXPECT_EQ(s.packable_tensors, 0);
}

TEST(ShippedConfigs, MixedDeepHasEveryKindOfLeaf) {
  BuildInfo info;
  const WorkloadSummary s = summarize("mixed-deep.json", &info);
  EXPECT_GE(s.max_depth, 6);
  EXPECT_GT(s.packable_tensors, 0);
  EXPECT_LT(s.packable_tensors, s.tensors);
  EXPECT_GT(s.largest_bytes, 256 << 10);  // too large to pack
  EXPECT_GT(s.non_contiguous, 0);
  EXPECT_GT(s.passthrough, 0);
  const int64_t pinned = info.demoted.count("pinned") ? info.demoted.at("pinned") : 0;
  EXPECT_GT(pinned + (s.memory.count("pinned") ? s.memory.at("pinned") : 0), 0);
  EXPECT_GE(s.dtypes.size(), 8u);
}

TEST(ShippedConfigsGpu, MixedDeepOnAGpuMachineHasPinnedLeavesAndTheSameBits) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device: pinned leaves are built pageable here";
  const Config config = load_config((configs_dir() / "mixed-deep.json").string());
  BuildOptions gpu;
  gpu.cuda_available = true;
  BuildInfo info;
  const c10::IValue data = build_workload(config, gpu, &info);
  const WorkloadSummary s = summarize_workload(data, info);
  EXPECT_TRUE(s.demoted.empty());
  EXPECT_GT(s.memory.at("pinned"), 0);
  EXPECT_EQ(testing::content_hash(data), testing::content_hash(build_workload(config, {})));
}

TEST(ShippedConfigs, RandomStreamPetrDrawsCountsInTheirRanges) {
  const Config config =
      load_config((configs_dir() / "streampetr-random.json").string(), {"samples=64"});
  const c10::IValue batch = build_workload(config, {});
  const auto samples = batch.toListRef();
  ASSERT_EQ(samples.size(), 64u);
  std::set<int64_t> ns;
  for (const auto& sample : samples) {
    const auto dict = sample.toGenericDict();
    const int64_t g = dict.at("gt_data").toGenericDict().at("class_ids").toTensor().numel();
    EXPECT_LE(g, 100);
    const auto cams = dict.at("cams_gt").toListRef();
    ASSERT_EQ(cams.size(), 6u);
    for (const auto& cam : cams) {
      const int64_t n = cam.toGenericDict().at("depths").toTensor().numel();
      EXPECT_LE(n, 30);
      EXPECT_EQ(cam.toGenericDict().at("bounding_boxes").toTensor().size(0), n);
      ns.insert(n);
    }
  }
  EXPECT_GE(ns.size(), 20u);  // the counts vary
  EXPECT_EQ(summarize_workload(batch).tensors, 64 * 33);
}

}  // namespace
}  // namespace mtc::bench
