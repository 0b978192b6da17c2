// summarize_workload / print_summary / WorkloadSummary::to_json.
#include "workload/summary.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <gtest/gtest.h>

#include <sstream>

namespace mtc::bench {
namespace {

at::Tensor bytes_tensor(int64_t bytes) {
  return at::empty({bytes}, at::TensorOptions().dtype(c10::kByte));
}

c10::IValue sample_workload() {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("empty", bytes_tensor(0));
  dict.insert("tiny", bytes_tensor(16));
  dict.insert("small", at::empty({17}, at::TensorOptions().dtype(c10::kByte)));
  dict.insert("limit",
              at::empty({64 * 1024}, at::TensorOptions().dtype(c10::kFloat)));  // exactly 256 KiB
  dict.insert("large", at::empty({64 * 1024 + 1}, at::TensorOptions().dtype(c10::kFloat)));
  dict.insert("strided", at::empty({4, 4}, at::TensorOptions().dtype(c10::kDouble)).t());
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(c10::IValue("text"));
  list.push_back(c10::IValue(3));
  list.push_back(c10::IValue());
  list.push_back(c10::ivalue::Tuple::create({c10::IValue(bytes_tensor(1))}));
  dict.insert("leaves", list);
  return dict;
}

TEST(Summary, CountsSizesDtypesAndPackability) {
  const WorkloadSummary s = summarize_workload(sample_workload());
  EXPECT_EQ(s.tensors, 7);
  EXPECT_EQ(s.bytes, 0 + 16 + 17 + 262144 + 262148 + 128 + 1);
  EXPECT_EQ(s.passthrough, 3);
  EXPECT_EQ(s.containers, 3);
  EXPECT_EQ(s.max_depth, 3);  // dict -> list -> tuple -> tensor
  EXPECT_EQ(s.smallest_bytes, 0);
  EXPECT_EQ(s.largest_bytes, 262148);
  EXPECT_EQ(s.non_contiguous, 1);
  // 16 B, 17 B, 256 KiB and 1 B: the empty, the too large and the transposed ones are not.
  EXPECT_EQ(s.packable_tensors, 4);
  EXPECT_EQ(s.packable_bytes, 16 + 17 + 262144 + 1);
  EXPECT_DOUBLE_EQ(s.packable_fraction(), 4.0 / 7.0);
  EXPECT_EQ(s.dtypes.at("uint8").tensors, 4);
  EXPECT_EQ(s.dtypes.at("float32").bytes, 262144 + 262148);
  EXPECT_EQ(s.dtypes.at("float64").tensors, 1);
  EXPECT_EQ(s.memory.at("pageable"), 7);
  std::map<std::string, int64_t> histogram;
  for (const auto& b : s.size_histogram) histogram[b.label] = b.tensors;
  EXPECT_EQ(histogram.at("0 B"), 1);
  EXPECT_EQ(histogram.at("1-16 B"), 2);
  EXPECT_EQ(histogram.at("17-256 B"), 2);
  EXPECT_EQ(histogram.at("64-256 KiB"), 1);
  EXPECT_EQ(histogram.at("256 KiB-1 MiB"), 1);
  EXPECT_EQ(histogram.at("> 16 MiB"), 0);
}

TEST(Summary, JsonHasEveryField) {
  BuildInfo info;
  info.demoted["pinned"] = 2;
  const nlohmann::json j = summarize_workload(sample_workload(), info).to_json();
  for (const char* key : {"tensors", "bytes", "passthrough", "containers", "max_depth",
                          "smallest_bytes", "largest_bytes", "non_contiguous", "packable",
                          "size_histogram", "dtypes", "memory", "demoted"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["tensors"], 7);
  EXPECT_EQ(j["packable"]["tensors"], 4);
  EXPECT_EQ(j["size_histogram"].size(), 9u);
  EXPECT_TRUE(j["size_histogram"].back()["max_bytes"].is_null());
  EXPECT_EQ(j["demoted"]["pinned"], 2);
  EXPECT_EQ(j["dtypes"]["float64"]["bytes"], 128);
}

TEST(Summary, PrintedSummaryNamesTheTotalsAndTheFallbacks) {
  BuildInfo info;
  info.demoted["cuda:0"] = 3;
  std::ostringstream out;
  print_summary(out, summarize_workload(sample_workload(), info));
  const std::string text = out.str();
  EXPECT_NE(text.find("7 tensors, 524,454 bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("packable (contiguous CPU, 1 B..256 KiB): 4 of 7 tensors"), std::string::npos)
      << text;
  EXPECT_NE(text.find("uint8 4"), std::string::npos) << text;
  EXPECT_NE(text.find("3 tensors asked for cuda:0 memory and were built pageable"),
            std::string::npos)
      << text;
}

TEST(Summary, EmptyAndScalarWorkloads) {
  const WorkloadSummary none = summarize_workload(c10::IValue());
  EXPECT_EQ(none.tensors, 0);
  EXPECT_EQ(none.passthrough, 1);
  EXPECT_EQ(none.packable_fraction(), 0.0);
  std::ostringstream out;
  print_summary(out, none);
  EXPECT_NE(out.str().find("0 tensors"), std::string::npos);
}

}  // namespace
}  // namespace mtc::bench
