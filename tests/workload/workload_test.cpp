// build_workload: the node kinds, layouts, memory kinds, limits and determinism.

// GCC 12 with -O2 or more and -fsanitize=address reports -Warray-bounds inside torch's
// ivalue_inl.h (TupleElements, reached from this file's toTupleRef().elements()): a false
// positive in a third-party header, which -isystem does not hide once inlined into our code.
// The pragma covers that header alone; it must be the first include that brings it in.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#include <ATen/core/ivalue.h>
#pragma GCC diagnostic pop

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "test_support.h"
#include "workload/config.h"
#include "workload/summary.h"
#include "workload/workload.h"

namespace mtc::bench {
namespace {

using testing::config_from_text;
using testing::content_hash;
using testing::expect_config_error;

c10::IValue build(const std::string& text, const std::vector<std::string>& sets = {},
                  const BuildOptions& options = {}) {
  return build_workload(config_from_text(text, sets), options);
}

std::vector<int64_t> sizes(const c10::IValue& value) { return value.toTensor().sizes().vec(); }

TEST(Workload, ContainersKeepKindsOrderAndPassthroughLeaves) {
  const c10::IValue data = build(R"({"structure": {"dict": {
      "z": {"tuple": [1, 2.5, "text", true, null]},
      "a": {"list": [{"tensor": {"dtype": "int32", "shape": [2]}}]},
      "v": {"value": {"nested": [1, {"k": "v"}], "big": 18446744073709551615}}}}})");
  ASSERT_TRUE(data.isGenericDict());
  const auto dict = data.toGenericDict();
  std::vector<std::string> order;
  for (const auto& entry : dict) order.push_back(entry.key().toStringRef());
  EXPECT_EQ(order, (std::vector<std::string>{"z", "a", "v"}));
  const auto tuple = dict.at("z").toTupleRef().elements();
  ASSERT_EQ(tuple.size(), 5u);
  EXPECT_EQ(tuple[0].toInt(), 1);
  EXPECT_EQ(tuple[1].toDouble(), 2.5);
  EXPECT_EQ(tuple[2].toStringRef(), "text");
  EXPECT_TRUE(tuple[3].toBool());
  EXPECT_TRUE(tuple[4].isNone());
  EXPECT_EQ(sizes(dict.at("a").toListRef()[0]), (std::vector<int64_t>{2}));
  const auto value = dict.at("v").toGenericDict();
  EXPECT_EQ(value.at("nested").toListRef()[1].toGenericDict().at("k").toStringRef(), "v");
  EXPECT_EQ(value.at("big").toDouble(), 18446744073709551615.0);
}

TEST(Workload, RepeatForLetAndSymbolsShapeTensors) {
  const c10::IValue data = build(R"({"structure": {"let": {"A": 3, "B": "A"}, "in": {"list": {
      "for": {"N": [1, 2, {"fixed": 5}], "M": [7, 8, 9]},
      "item": {"let": {"A": 4}, "in": {"tensor": {"dtype": "uint8", "shape": ["N", "M", "A", "B"]}}}}}}})");
  const auto items = data.toListRef();
  ASSERT_EQ(items.size(), 3u);
  // The inner "let" shadows A; B was bound to the outer A.
  EXPECT_EQ(sizes(items[0]), (std::vector<int64_t>{1, 7, 4, 3}));
  EXPECT_EQ(sizes(items[1]), (std::vector<int64_t>{2, 8, 4, 3}));
  EXPECT_EQ(sizes(items[2]), (std::vector<int64_t>{5, 9, 4, 3}));
}

TEST(Workload, CycleTakesOptionsInTurn) {
  const c10::IValue data =
      build(R"({"structure": {"list": {"repeat": 7, "item": {"cycle": ["a", "b", "c"]}}}})");
  std::string seen;
  for (const auto& item : data.toListRef()) seen += item.toStringRef();
  EXPECT_EQ(seen, "abcabca");
}

TEST(Workload, ChooseFollowsItsWeights) {
  const c10::IValue data = build(R"({"structure": {"list": {"repeat": 4000, "item":
      {"choose": ["x", "y", "never"], "weights": [3, 1, 0]}}}})");
  int x = 0;
  int y = 0;
  for (const auto& item : data.toListRef()) {
    ASSERT_NE(item.toStringRef(), "never");
    (item.toStringRef() == "x" ? x : y)++;
  }
  EXPECT_NEAR(x / 4000.0, 0.75, 0.03);
}

TEST(Workload, DefinitionsAreSharedWhereverTheyAreUsed) {
  const c10::IValue data = build(R"({
      "defs": {"pair": {"tuple": [{"ref": "leaf"}, {"ref": "leaf"}]},
               "leaf": {"tensor": {"dtype": "float32", "shape": ["N"]}}},
      "structure": {"let": {"N": 2}, "in": {"list": [{"ref": "pair"}, {"ref": "leaf"}]}}})");
  const auto items = data.toListRef();
  EXPECT_EQ(items[0].toTupleRef().elements().size(), 2u);
  EXPECT_EQ(sizes(items[1]), (std::vector<int64_t>{2}));
}

TEST(Workload, ParamsSubstituteAnywhereAndSetOverridesThem) {
  const std::string text = R"({"params": {"n": 3, "dtype": "int16", "dist": {"constant": 7}},
      "structure": {"list": {"repeat": {"param": "n"}, "item":
        {"tensor": {"dtype": {"param": "dtype"}, "shape": [2], "values": {"param": "dist"}}}}}})";
  const c10::IValue data = build(text);
  const auto items = data.toListRef();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].toTensor().scalar_type(), c10::kShort);
  const c10::IValue other = build(text, {"n=5", "dtype=float64", R"(dist={"constant": 2.5})"});
  const auto overridden = other.toListRef();
  ASSERT_EQ(overridden.size(), 5u);
  EXPECT_EQ(overridden[0].toTensor().scalar_type(), c10::kDouble);
  EXPECT_EQ(overridden[0].toTensor().data_ptr<double>()[1], 2.5);
}

TEST(Workload, TransposeLayoutIsANonContiguousViewOfTheDeclaredShape) {
  const at::Tensor t = build(R"({"structure": {"tensor": {"dtype": "int64", "shape": [3, 5],
      "values": {"arange": {}}, "layout": {"transpose": [0, -1]}}}})")
                           .toTensor();
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{3, 5}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{1, 3}));
  // The base [5, 3] holds 0..14 in memory order; element (i, j) of the view is base (j, i).
  EXPECT_EQ(t.contiguous().data_ptr<int64_t>()[1 * 5 + 2], 2 * 3 + 1);
}

TEST(Workload, SliceLayoutStridesOverALongerBase) {
  const at::Tensor t = build(R"({"structure": {"tensor": {"dtype": "float32", "shape": [4, 3],
      "values": {"arange": {"start": 0, "step": 1}}, "layout": {"slice": {"dim": 0, "step": 3}}}}})")
                           .toTensor();
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{9, 1}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.storage().nbytes(), 12u * 3u * sizeof(float));
  EXPECT_EQ(t.contiguous().data_ptr<float>()[3], 9.0f);  // row 1 of the view is base row 3
}

TEST(Workload, PinnedAndCudaLeavesArePageableWithoutCudaAndCounted) {
  const std::string text = R"({"structure": {"list": [
      {"tensor": {"dtype": "float32", "shape": [4], "memory": "pinned"}},
      {"tensor": {"dtype": "float32", "shape": [4], "memory": "pinned"}},
      {"tensor": {"dtype": "float32", "shape": [4], "memory": "cuda:0"}},
      {"tensor": {"dtype": "float32", "shape": [4]}}]}})";
  BuildInfo info;
  const c10::IValue data = build_workload(config_from_text(text), BuildOptions{}, &info);
  EXPECT_EQ(info.demoted.at("pinned"), 2);
  EXPECT_EQ(info.demoted.at("cuda:0"), 1);
  const WorkloadSummary summary = summarize_workload(data, info);
  EXPECT_EQ(summary.memory.at("pageable"), 4);
  EXPECT_EQ(summary.demoted.at("pinned"), 2);
  // Same values whether or not the memory kind could be honoured.
  const c10::IValue pageable = build(R"({"structure": {"list": [
      {"tensor": {"dtype": "float32", "shape": [4]}}, {"tensor": {"dtype": "float32", "shape": [4]}},
      {"tensor": {"dtype": "float32", "shape": [4]}}, {"tensor": {"dtype": "float32", "shape": [4]}}]}})");
  EXPECT_EQ(content_hash(data), content_hash(pageable));
}

TEST(WorkloadGpu, PinnedAndCudaLeavesOnAGpuMachine) {
  if (!at::hasCUDA())
    GTEST_SKIP() << "no CUDA device: pinned and cuda:N leaves cannot be built here";
  const std::string text = R"({"structure": {"list": [
      {"tensor": {"dtype": "float32", "shape": [4], "memory": "pinned"}},
      {"tensor": {"dtype": "float32", "shape": [4, 2], "memory": "cuda:0", "layout": {"transpose": [0, 1]}}},
      {"tensor": {"dtype": "float32", "shape": [4], "memory": "cuda:999"}}]}})";
  BuildOptions options;
  options.cuda_available = true;
  expect_config_error([&] { build(text, {}, options); }, "/structure/list/2", "does not exist");
  const std::string ok = R"({"structure": {"list": [
      {"tensor": {"dtype": "float32", "shape": [4], "memory": "pinned"}},
      {"tensor": {"dtype": "float32", "shape": [4, 2], "memory": "cuda:0", "layout": {"transpose": [0, 1]}}}]}})";
  const c10::IValue data = build(ok, {}, options);
  const auto items = data.toListRef();
  EXPECT_TRUE(items[0].toTensor().is_pinned());
  EXPECT_TRUE(items[1].toTensor().is_cuda());
  EXPECT_FALSE(items[1].toTensor().is_contiguous());
  const WorkloadSummary summary = summarize_workload(build(ok, {}, options));
  EXPECT_EQ(summary.memory.at("pinned"), 1);
  EXPECT_EQ(summary.memory.at("cuda:0"), 1);
  // The values do not depend on where the tensors live.
  BuildOptions cpu_only;
  EXPECT_EQ(content_hash(build(ok, {}, options)), content_hash(build(ok, {}, cpu_only)));
}

TEST(Workload, NpyAndPtLeavesInsideAStructure) {
  const c10::IValue data = build(R"({"structure": {"dict": {
      "npy": {"npy": "npy/int32.npy"},
      "batch": {"pt": {"file": "pt/list.pt", "memory": "pageable"}}}}})");
  const auto dict = data.toGenericDict();
  EXPECT_EQ(sizes(dict.at("npy")), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(dict.at("batch").toListRef().size(), 2u);
  // A second build shares the loaded tensors but not the containers.
  const c10::IValue again = build(R"({"structure": {"pt": "pt/list.pt"}})");
  EXPECT_EQ(again.toListRef()[1].toTensor().numel(), 3);
}

TEST(Workload, SizeAndNodeLimitsStopRunawayBuilds) {
  BuildOptions small;
  small.max_bytes = 1000;
  expect_config_error(
      [&] {
        build(R"({"structure": {"tensor": {"dtype": "float64", "shape": [200]}}})", {}, small);
      },
      "/structure", "more than 1000 bytes");
  BuildOptions few;
  few.max_nodes = 100;
  expect_config_error(
      [&] {
        build(R"({"structure": {"list": {"repeat": 1000000000000, "item": null}}})", {}, few);
      },
      "/structure/list/repeat", "exceeds the build limit");
  // A literal is built afresh each time: its elements count as nodes, its strings as bytes.
  expect_config_error(
      [&] {
        build(R"({"structure": {"list": {"repeat": 20, "item": {"value": [[], [], [], [], []]}}}})",
              {}, few);
      },
      "/structure/list/item", "more than 100 nodes");
  const std::string text(100, 'x');
  expect_config_error(
      [&] {
        build(R"({"structure": {"list": {"repeat": 20, "item": {"value": ")" + text + R"("}}}})",
              {}, small);
      },
      "/structure/list/item", "more than 1000 bytes");
  // A literal dict's keys are strings made afresh too.
  expect_config_error(
      [&] {
        build(
            R"({"structure": {"list": {"repeat": 20, "item": {"value": {")" + text + R"(": 1}}}}})",
            {}, small);
      },
      "/structure/list/item", "more than 1000 bytes");
  expect_config_error(
      [&] {
        build(R"({"structure": {"tensor": {"dtype": "float64",
                                       "shape": [{"uniform": [4000000000, 5000000000]}, 100000]}}})");
      },
      "/structure", "impossible size");
  // Drawn empty, with extents behind it whose product torch's strides cannot hold.
  expect_config_error(
      [&] {
        build(R"({"structure": {"tensor": {"dtype": "float32",
                  "shape": [{"uniform": [0, 0]}, 4294967296, 4294967296]}}})");
      },
      "/structure", "multiply past 2^63");
}

// count_workload's totals are the build's: the build passes at exactly those limits and fails
// one below. Nothing is allocated, so a config of terabytes fails in a moment (it passed
// `validate --no-build`, and its build grew until the machine ran out of memory).
TEST(Workload, CountingIsTheBuildWithoutItsMemory) {
  const Config config = load_config((testing::configs_dir() / "streampetr-random.json").string());
  const WorkloadTotals totals = count_workload(config, {});
  EXPECT_GT(totals.nodes, 500);
  BuildOptions exact;
  exact.max_bytes = totals.bytes;
  exact.max_nodes = totals.nodes;
  EXPECT_NO_THROW(build_workload(config, exact));
  BuildOptions fewer_bytes = exact;
  fewer_bytes.max_bytes -= 1;
  EXPECT_THROW(count_workload(config, fewer_bytes), ConfigError);
  EXPECT_THROW(build_workload(config, fewer_bytes), ConfigError);
  BuildOptions fewer_nodes = exact;
  fewer_nodes.max_nodes -= 1;
  EXPECT_THROW(count_workload(config, fewer_nodes), ConfigError);
  BuildOptions machine;
  machine.max_bytes = uint64_t{24} << 30;
  machine.max_bytes_origin = "this machine's memory";
  expect_config_error(
      [&] {
        count_workload(
            config_from_text(R"({"structure": {"list": {"repeat": 4096, "item": {"tensor":
                               {"dtype": "float64", "shape": [1000000000]}}}}})"),
            machine);
      },
      "/structure/list/item",
      "more than 25769803776 bytes of tensors and literal strings (this "
      "machine's memory)");
}

TEST(Workload, SameSeedSameBitsDifferentSeedDifferentBits) {
  const std::string path = (testing::configs_dir() / "streampetr-random.json").string();
  const Config config = load_config(path);
  const uint64_t first = content_hash(build_workload(config, {}));
  EXPECT_EQ(first, content_hash(build_workload(config, {})));
  EXPECT_EQ(first, content_hash(build_workload(load_config(path), {})));
  EXPECT_NE(first, content_hash(build_workload(load_config(path, {"/seed=2"}), {})));
}

TEST(Workload, ThreadCountDoesNotChangeTheBits) {
  const Config config = load_config((testing::configs_dir() / "mixed-deep.json").string());
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const uint64_t one = content_hash(build_workload(config, {}));
  at::set_num_threads(4);
  const uint64_t four = content_hash(build_workload(config, {}));
  at::set_num_threads(threads);
  EXPECT_EQ(one, four);
  // Concurrent builds of one config neither interfere nor differ.
  std::vector<uint64_t> hashes(3);
  std::vector<std::thread> workers;
  for (size_t i = 0; i < hashes.size(); ++i) {
    workers.emplace_back([&, i] { hashes[i] = content_hash(build_workload(config, {})); });
  }
  for (auto& worker : workers) worker.join();
  for (uint64_t h : hashes) EXPECT_EQ(h, one);
}

// Changing one tensor's values must not move any other tensor's values or any shape.
TEST(Workload, EachTensorDrawsFromItsOwnStream) {
  const std::string a = R"({"structure": {"list": [
      {"tensor": {"dtype": "float32", "shape": [{"uniform": [1, 9]}]}},
      {"tensor": {"dtype": "float32", "shape": [{"uniform": [1, 9]}]}}]}})";
  const std::string b = R"({"structure": {"list": [
      {"tensor": {"dtype": "float32", "shape": [{"uniform": [1, 9]}], "values": {"normal": {"mean": 5, "std": 1}}}},
      {"tensor": {"dtype": "float32", "shape": [{"uniform": [1, 9]}]}}]}})";
  const c10::IValue data_a = build(a);
  const c10::IValue data_b = build(b);
  const auto x = data_a.toListRef();
  const auto y = data_b.toListRef();
  EXPECT_EQ(sizes(x[0]), sizes(y[0]));
  EXPECT_EQ(content_hash(x[1]), content_hash(y[1]));
}

}  // namespace
}  // namespace mtc::bench
