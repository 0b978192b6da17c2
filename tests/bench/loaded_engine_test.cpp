// Two builds of the engine in one process: this program's (linked) and the same tree's built as a
// loadable library (src/engine_plugin), as the in-process A/B loads a baseline. They must copy
// alike and share no state; a library that is not a compatible engine is refused with exit 2.
#include "runner/strategies/loaded_engine.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>

#include "errors.h"
#include "runner/env/environment.h"
#include "runner/strategies/engine.h"
#include "temp_dir.h"

namespace mtc::bench {
namespace {

using testing_support::TempDir;

// A copy of the library under another name: the loader keeps one instance per file, and two
// files are two builds as far as the process is concerned.
std::string copy_of_plugin(const TempDir& dir, const std::string& name) {
  std::ifstream in(MTC_TEST_ENGINE_PLUGIN, std::ios::binary);
  const std::string path = dir / name;
  std::ofstream(path, std::ios::binary) << in.rdbuf();
  return path;
}

c10::IValue nested_batch() {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("boxes", at::arange(20, at::kFloat).reshape({5, 4}));
  d.insert("ids", at::arange(5, at::kLong));
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(c10::IValue(d));
  list.push_back(c10::IValue(at::ones({3}, at::kDouble)));
  return c10::IValue(list);
}

TEST(LoadedEngine, CopiesLikeTheLinkedEngine) {
  const LoadedEngine engine("base", MTC_TEST_ENGINE_PLUGIN);
  const c10::IValue input = nested_batch();
  LoadedEngine::Copy copy = engine.start_copy(input, c10::Device(c10::kCPU), mtc::CopyOptions{});
  const c10::IValue output = engine.get(copy);
  const c10::IValue linked = mtc::start_copy(input, c10::Device(c10::kCPU)).get();
  ASSERT_TRUE(output.isList());
  ASSERT_EQ(output.toListRef().size(), 2u);
  const auto dict = output.toListRef()[0].toGenericDict();
  EXPECT_TRUE(at::equal(dict.at("boxes").toTensor(),
                        input.toListRef()[0].toGenericDict().at("boxes").toTensor()));
  EXPECT_TRUE(at::equal(output.toListRef()[1].toTensor(), linked.toListRef()[1].toTensor()));
  EXPECT_EQ(engine.stats(copy).tensors, 3);
  // CPU->CPU returns the input tensors in new containers, in both builds.
  EXPECT_TRUE(output.toListRef()[1].toTensor().is_same(input.toListRef()[1].toTensor()));
  EXPECT_EQ(engine.revision(), build_revision());
}

TEST(LoadedEngine, EachBuildKeepsItsOwnState) {
  TempDir dir;
  const LoadedEngine first("first", copy_of_plugin(dir, "first.so"));
  const LoadedEngine second("second", copy_of_plugin(dir, "second.so"));
  const int64_t linked_limit = mtc::pinned_pool_stats().limit_bytes;
  first.set_pinned_pool_limit(int64_t{3} << 20);
  second.set_pinned_pool_limit(int64_t{5} << 20);
  EXPECT_EQ(first.pinned_pool_stats().limit_bytes, int64_t{3} << 20);
  EXPECT_EQ(second.pinned_pool_stats().limit_bytes, int64_t{5} << 20);
  EXPECT_EQ(mtc::pinned_pool_stats().limit_bytes, linked_limit);
  // The strategies report the pool of the build they copy with.
  const EngineStrategy linked("engine", {});
  const EngineStrategy loaded("engine@first", {},
                              std::make_shared<const LoadedEngine>("first", dir / "first.so"));
  EXPECT_EQ(loaded.pinned_pool_stats().limit_bytes, int64_t{3} << 20);
  EXPECT_EQ(linked.pinned_pool_stats().limit_bytes, linked_limit);
  first.set_pinned_pool_limit(0);
  second.set_pinned_pool_limit(0);
}

TEST(LoadedEngine, EngineErrorsReachTheCaller) {
  const LoadedEngine engine("base", MTC_TEST_ENGINE_PLUGIN);
  mtc::CopyOptions bad;
  bad.min_packed_alignment_bytes = 0;
  try {
    engine.start_copy(nested_batch(), c10::Device(c10::kCPU), bad);
    FAIL() << "an alignment of 0 was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("alignment"), std::string::npos) << e.what();
  }
}

void expect_refused(const std::string& path, const std::string& wanted) {
  try {
    LoadedEngine("base", path);
    FAIL() << path << " was loaded";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--engine-lib base=" + path), std::string::npos) << what;
    EXPECT_NE(what.find(wanted), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
}

TEST(LoadedEngine, RefusesWhatIsNotACompatibleEngine) {
  TempDir dir;
  std::ofstream(dir / "text.so") << "not a library";
  expect_refused(dir / "missing.so", "cannot load it");
  expect_refused(dir / "text.so", "cannot load it");
  expect_refused("libm.so.6", "not an mtc engine library");
  expect_refused(MTC_TEST_FAKE_ENGINE_PLUGIN, "engine plugin interface 99");
}

}  // namespace
}  // namespace mtc::bench
