// load_saved_batch over files written by torch.save (make_fixtures.py).
#include "workload/saved_batch.h"

#include <ATen/core/Tensor.h>
#include <c10/util/BFloat16.h>
#include <gtest/gtest.h>

#include "test_support.h"

namespace mtc::bench {
namespace {

using testing::fixture;

std::vector<std::string> keys(const c10::impl::GenericDict& dict) {
  std::vector<std::string> out;
  for (const auto& entry : dict) out.push_back(entry.key().toStringRef());
  return out;
}

// Element i of every fixture tensor is i (make_fixtures.py's arange).
void expect_arange(const at::Tensor& t, c10::ScalarType dtype, std::vector<int64_t> shape) {
  EXPECT_EQ(t.scalar_type(), dtype);
  EXPECT_EQ(t.sizes().vec(), shape);
  const at::Tensor dense = t.contiguous().to(c10::kDouble);
  for (int64_t i = 0; i < dense.numel(); ++i)
    EXPECT_EQ(dense.data_ptr<double>()[i], static_cast<double>(i));
}

TEST(SavedBatch, NestedDictsListsTuplesTensorsAndScalarsRoundTrip) {
  const c10::IValue batch = load_saved_batch(fixture("pt/batch.pt"));
  ASSERT_TRUE(batch.isGenericDict());
  const auto dict = batch.toGenericDict();
  EXPECT_EQ(keys(dict), (std::vector<std::string>{"images", "meta", "pair", "nested", "transposed",
                                                  "half", "mask"}));

  const auto images = dict.at("images").toListRef();
  ASSERT_EQ(images.size(), 2u);
  expect_arange(images[0].toTensor(), c10::kFloat, {2, 3});
  expect_arange(images[1].toTensor(), c10::kByte, {4});

  const auto meta = dict.at("meta").toGenericDict();
  EXPECT_EQ(meta.at("name").toStringRef(), "sample-0");
  EXPECT_EQ(meta.at("id").toInt(), 7);
  EXPECT_EQ(meta.at("scale").toDouble(), 0.5);
  EXPECT_TRUE(meta.at("flag").toBool());
  EXPECT_TRUE(meta.at("none").isNone());

  const auto pair = dict.at("pair").toTupleRef().elements();
  ASSERT_EQ(pair.size(), 2u);
  expect_arange(pair[0].toTensor(), c10::kLong, {3});
  EXPECT_EQ(pair[1].toStringRef(), "tag");

  const auto nested = dict.at("nested").toListRef();
  ASSERT_EQ(nested.size(), 2u);
  expect_arange(nested[0].toGenericDict().at("boxes").toTensor(), c10::kFloat, {2, 4});
  expect_arange(nested[1].toGenericDict().at("boxes").toTensor(), c10::kFloat, {1, 4});

  // A transposed view keeps its strides: arange(6).reshape(2, 3).t()
  const at::Tensor transposed = dict.at("transposed").toTensor();
  EXPECT_EQ(transposed.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(transposed.strides().vec(), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(transposed.contiguous().data_ptr<double>()[1], 3.0);

  expect_arange(dict.at("half").toTensor(), c10::kBFloat16, {5});
  const at::Tensor mask = dict.at("mask").toTensor();
  EXPECT_EQ(mask.scalar_type(), c10::kBool);
  EXPECT_EQ(mask.data_ptr<bool>()[0], true);
  EXPECT_EQ(mask.data_ptr<bool>()[1], false);
}

TEST(SavedBatch, TopLevelList) {
  const c10::IValue batch = load_saved_batch(fixture("pt/list.pt"));
  const auto items = batch.toListRef();
  ASSERT_EQ(items.size(), 2u);
  expect_arange(items[0].toTensor(), c10::kInt, {2});
  expect_arange(items[1].toTensor(), c10::kInt, {3});
}

TEST(SavedBatch, RejectedFilesNameTheReason) {
  testing::expect_config_error([] { load_saved_batch(fixture("pt/missing.pt")); }, "",
                               "no such file");
  testing::expect_config_error([] { load_saved_batch(fixture("pt/not_pt.pt")); }, "",
                               "not a zip archive");
  testing::expect_config_error([] { load_saved_batch(fixture("pt/corrupt.pt")); }, "",
                               "not a readable torch.save file");
  testing::expect_config_error([] { load_saved_batch(fixture("pt/legacy.pt")); }, "",
                               "legacy (non-zip)");
  testing::expect_config_error([] { load_saved_batch(fixture("npy/float32.npy")); }, "",
                               "not a zip archive");
  testing::TempDir dir;
  testing::expect_config_error([&] { load_saved_batch(dir.write("empty.pt", "")); }, "",
                               "not a zip archive");
}

// Found by fuzz_saved_batch (tests/fuzz): a damaged archive whose directory points past the end
// of the file. libtorch's own reader (behind torch::jit::pickle_load) copied from beyond the
// buffer and crashed the process; now it is a ConfigError like any other damaged file. The
// fixture is the fuzzer's input as found (make_fixtures.py does not make it).
TEST(SavedBatch, ArchiveDirectoryPastTheEndIsRejectedNotRead) {
  testing::expect_config_error([] { load_saved_batch(fixture("pt/directory_past_end.pt")); }, "",
                               "not a readable torch.save file");
}

}  // namespace
}  // namespace mtc::bench
