// configs/streampetr.json must be exactly the reference batch of shared/anchors.md.
#include <ATen/core/Tensor.h>
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "test_support.h"
#include "workload/config.h"
#include "workload/summary.h"
#include "workload/workload.h"

namespace mtc::bench {
namespace {

using testing::configs_dir;

struct BaseConfig {
  int64_t g;
  std::array<int64_t, 6> n;
};
constexpr std::array<BaseConfig, 4> kBase{{
    {60, {30, 20, 40, 10, 50, 20}},
    {100, {60, 40, 30, 70, 20, 50}},
    {45, {10, 20, 10, 30, 20, 10}},
    {120, {80, 50, 60, 40, 70, 30}},
}};

std::vector<std::string> keys(const c10::impl::GenericDict& dict) {
  std::vector<std::string> out;
  for (const auto& entry : dict) out.push_back(entry.key().toStringRef());
  return out;
}

void expect_tensor(const c10::IValue& value, c10::ScalarType dtype, std::vector<int64_t> shape,
                   const std::string& where) {
  ASSERT_TRUE(value.isTensor()) << where;
  const at::Tensor& t = value.toTensor();
  EXPECT_EQ(t.scalar_type(), dtype) << where;
  EXPECT_EQ(t.sizes().vec(), shape) << where;
  EXPECT_TRUE(t.is_contiguous()) << where;
  EXPECT_TRUE(t.is_cpu()) << where;
}

c10::IValue build_reference(const std::vector<std::string>& sets = {}) {
  const Config config = load_config((configs_dir() / "streampetr.json").string(), sets);
  return build_workload(config, BuildOptions{});
}

TEST(ReferenceBatch, ShapesDtypesAndKeyOrderMatchTheAnchors) {
  const c10::IValue batch = build_reference();
  ASSERT_TRUE(batch.isList());
  const auto samples = batch.toListRef();
  ASSERT_EQ(samples.size(), 16u);
  const std::vector<std::string> camera_keys{"bounding_boxes", "class_ids", "active", "depths",
                                             "proj_mat"};
  for (size_t s = 0; s < samples.size(); ++s) {
    const BaseConfig& base = kBase[s % kBase.size()];  // 4 base configs repeated 4 times, in turn
    ASSERT_TRUE(samples[s].isGenericDict());
    const auto sample = samples[s].toGenericDict();
    EXPECT_EQ(keys(sample), (std::vector<std::string>{"cams_gt", "gt_data"}));
    const auto cams = sample.at("cams_gt").toListRef();
    ASSERT_EQ(cams.size(), 6u);
    for (size_t c = 0; c < cams.size(); ++c) {
      const auto cam = cams[c].toGenericDict();
      const std::string where = "sample " + std::to_string(s) + " camera " + std::to_string(c);
      EXPECT_EQ(keys(cam), camera_keys) << where;
      const int64_t n = base.n[c];
      expect_tensor(cam.at("bounding_boxes"), c10::kFloat, {n, 4}, where);
      expect_tensor(cam.at("class_ids"), c10::kLong, {n}, where);
      expect_tensor(cam.at("active"), c10::kBool, {n}, where);
      expect_tensor(cam.at("depths"), c10::kFloat, {n}, where);
      expect_tensor(cam.at("proj_mat"), c10::kFloat, {3, 4}, where);
    }
    const auto gt = sample.at("gt_data").toGenericDict();
    EXPECT_EQ(keys(gt), (std::vector<std::string>{"bounding_boxes_3d", "class_ids", "active"}));
    const std::string where = "sample " + std::to_string(s) + " gt_data";
    expect_tensor(gt.at("bounding_boxes_3d"), c10::kFloat, {base.g, 7}, where);
    expect_tensor(gt.at("class_ids"), c10::kLong, {base.g}, where);
    expect_tensor(gt.at("active"), c10::kBool, {base.g}, where);
  }
}

TEST(ReferenceBatch, TotalsMatchTheAnchors) {
  const WorkloadSummary summary = summarize_workload(build_reference());
  EXPECT_EQ(summary.tensors, 528);
  EXPECT_EQ(summary.bytes, 153'628);
  EXPECT_EQ(summary.smallest_bytes, 10);
  EXPECT_EQ(summary.largest_bytes, 3'360);
  EXPECT_EQ(summary.packable_tensors, 528);
  EXPECT_EQ(summary.passthrough, 0);
  EXPECT_EQ(summary.non_contiguous, 0);
  EXPECT_EQ(summary.memory.at("pageable"), 528);
}

TEST(ReferenceBatch, SamplesParameterScalesTheBatch) {
  const WorkloadSummary four = summarize_workload(build_reference({"samples=4"}));
  EXPECT_EQ(four.tensors, 132);
  EXPECT_EQ(four.bytes, 38'407);
  const WorkloadSummary sixty_four = summarize_workload(build_reference({"samples=64"}));
  EXPECT_EQ(sixty_four.tensors, 2'112);
  EXPECT_EQ(sixty_four.bytes, 614'512);
}

TEST(ReferenceBatch, ValuesFollowTheirDistributions) {
  const auto sample = build_reference().toListRef()[0].toGenericDict();
  const auto cam = sample.at("cams_gt").toListRef()[0].toGenericDict();
  const at::Tensor ids = cam.at("class_ids").toTensor();
  const int64_t* id = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    EXPECT_GE(id[i], 0);
    EXPECT_LE(id[i], 9);
  }
  const at::Tensor boxes = cam.at("bounding_boxes").toTensor();
  const float* box = boxes.data_ptr<float>();
  for (int64_t i = 0; i < boxes.numel(); ++i) {
    EXPECT_GE(box[i], 0.0f);
    EXPECT_LE(box[i], 1600.0f);
  }
}

// The values are part of the reference: any platform, compiler or library change that alters a
// single bit of the batch fails here. Update the constant only for a deliberate format change.
TEST(ReferenceBatch, ContentIsBitIdenticalToTheRecordedOne) {
  EXPECT_EQ(testing::content_hash(build_reference()), 0xa6cbd36220e38427ULL);
}

}  // namespace
}  // namespace mtc::bench
