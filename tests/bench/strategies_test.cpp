// Strategies and the measuring loop on the CPU (h2h), plus GPU checks that skip without one.
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "measure_support.h"
#include "runner/env/environment.h"
#include "runner/measure/bench_runner.h"
#include "runner/measure/case_runner.h"
#include "runner/strategies/catalog.h"
#include "runner/strategies/engine.h"
#include "runner/strategies/registry.h"
#include "runner/strategies/structure.h"
#include "runner/verify/verify.h"

namespace mtc::bench {
namespace {

const c10::Device kCpu(c10::kCPU);
const Route kH2H{Direction::kH2H, kCpu, kCpu};

c10::IValue make_batch() {
  c10::impl::GenericList samples(c10::AnyType::get());
  for (int i = 0; i < 3; ++i) {
    c10::impl::GenericDict sample(c10::StringType::get(), c10::AnyType::get());
    sample.insert("boxes", at::arange(8 * (i + 1), at::kFloat).reshape({-1, 4}));
    sample.insert("ids", at::arange(i + 1, at::kLong));
    sample.insert("strided", at::arange(16, at::kFloat).reshape({4, 4}).t());
    sample.insert("name", std::string("s") + std::to_string(i));
    samples.push_back(sample);
  }
  return c10::ivalue::Tuple::create({samples, c10::IValue()});
}

CaseSettings fast_settings() {
  CaseSettings s;
  s.warmup = 1;
  s.patterns = {Pattern::kHot};
  s.stopping.min_samples = 5;
  s.stopping.min_time_s = 0.0;
  s.stopping.timeout_s = 2.0;
  s.stopping.min_rounds = 2;
  s.stopping.max_rounds = 3;
  s.stopping.round_time_s = 0.005;
  return s;
}

using testing_support::measure_rounds;

std::vector<c10::IValue> one(c10::IValue input) { return {std::move(input)}; }

TEST(Structure, MapRebuildsEveryContainerKind) {
  const c10::IValue in = make_batch();
  int64_t calls = 0;
  const c10::IValue out = map_tensors(in, [&](const at::Tensor& t) {
    ++calls;
    return t.clone();
  });
  EXPECT_EQ(calls, 9);
  EXPECT_FALSE(verify_copy(in, out, kCpu));
  EXPECT_FALSE(out.toTupleRef().elements()[0].isSameIdentity(in.toTupleRef().elements()[0]));
}

// Whether a and b are one object (isSameIdentity compares strings by their text).
bool same_object(const c10::IValue& a, const c10::IValue& b) {
  return a.isString() ? a.toString().get() == b.toString().get() : a.isSameIdentity(b);
}

// Every reference-counted object of the copy is its own: tensors through fn, strings new.
TEST(Structure, OwnStructureSharesNoStringOrTensor) {
  const c10::IValue in = make_batch();
  const c10::IValue out = own_structure(in, [](const at::Tensor& t) { return t.clone(); });
  EXPECT_FALSE(verify_copy(in, out, kCpu));
  const auto sample = [](const c10::IValue& batch) {
    return batch.toTupleRef().elements()[0].toListRef()[0].toGenericDict();
  };
  for (auto a = sample(in).begin(), b = sample(out).begin(); a != sample(in).end(); ++a, ++b) {
    EXPECT_EQ(a->key().toStringRef(), b->key().toStringRef());
    EXPECT_FALSE(same_object(a->key(), b->key())) << a->key().toStringRef();
    EXPECT_FALSE(same_object(a->value(), b->value())) << a->key().toStringRef();
  }
  // map_tensors, the baselines' walk, keeps the keys as a user's map does.
  const c10::IValue mapped = map_tensors(in, [](const at::Tensor& t) { return t; });
  EXPECT_TRUE(same_object(sample(mapped).begin()->key(), sample(in).begin()->key()));
}

TEST(BenchRunner, SeveralGpuThreadsEachGetAHostInputOfTheirOwn) {
  const c10::IValue workload = make_batch();
  EXPECT_TRUE(input_for(workload, Direction::kH2D, 0).isSameIdentity(workload));
  const c10::IValue own = input_for(workload, Direction::kH2D, 1, /*several=*/true);
  EXPECT_FALSE(own.isSameIdentity(workload));
  EXPECT_FALSE(verify_copy(workload, own, kCpu));
  std::vector<const void*> seen;
  for_each_tensor(workload, [&](const at::Tensor& t) { seen.push_back(t.data_ptr()); });
  for_each_tensor(own, [&](const at::Tensor& t) {
    EXPECT_EQ(std::count(seen.begin(), seen.end(), t.data_ptr()), 0) << "a tensor is shared";
  });
}

TEST(Structure, TypedListsKeepTheirType) {
  c10::List<at::Tensor> typed;
  typed.push_back(at::arange(3, at::kFloat));
  const c10::IValue out = map_tensors(typed, [](const at::Tensor& t) { return t; });
  EXPECT_TRUE(out.isTensorList());
}

TEST(Structure, CountsTensorsAndBytes) {
  const LeafCount count = count_tensors(make_batch());
  EXPECT_EQ(count.tensors, 9);
  EXPECT_EQ(count.bytes, (8 + 16 + 24) * 4 + (1 + 2 + 3) * 8 + 3 * 16 * 4);
}

TEST(Registry, MakesEveryCatalogStrategy) {
  for (const std::string& name : strategy_names()) {
    const auto strategy = make_strategy(name, mtc::CopyOptions{});
    ASSERT_TRUE(strategy);
    EXPECT_EQ(strategy->name(), name);
  }
}

TEST(Registry, EngineVariantsChangeOneOption) {
  mtc::CopyOptions base;
  base.max_packed_chunk_bytes = 8192;
  const auto options_of = [&base](std::string_view name) {
    return dynamic_cast<const EngineStrategy&>(*make_strategy(name, base)).options();
  };
  EXPECT_FALSE(options_of("engine_no_pack").pack_cpu_tensors);
  EXPECT_TRUE(options_of("engine_no_pack").use_pinned_staging);
  EXPECT_EQ(options_of("engine_no_pack").max_packed_chunk_bytes, 8192);
  EXPECT_FALSE(options_of("engine_no_pinned").use_pinned_staging);
  EXPECT_FALSE(options_of("engine_no_thread").use_background_thread);
  EXPECT_TRUE(options_of("engine_pinned_out").pinned_host_outputs);
  EXPECT_FALSE(options_of("engine").pinned_host_outputs);
  EXPECT_TRUE(options_of("engine").use_background_thread);
  // A report's engine rows say which options copied: each variant's must differ from engine's.
  const auto reported = [&options_of](std::string_view name) {
    return copy_options_json(options_of(name));
  };
  EXPECT_EQ(reported("engine_pinned_out").at("pinned_host_outputs"), true);
  EXPECT_EQ(reported("engine").at("pinned_host_outputs"), false);
  EXPECT_NE(reported("engine"), reported("engine_pinned_out"));
  EXPECT_NE(reported("engine"), reported("engine_no_pack"));
  EXPECT_NE(reported("engine"), reported("engine_no_pinned"));
  EXPECT_NE(reported("engine"), reported("engine_no_thread"));
  EngineOverrides overrides;
  overrides.max_chunk_bytes = 4096;
  overrides.pack = false;
  const mtc::CopyOptions o = engine_options(overrides);
  EXPECT_EQ(o.max_packed_chunk_bytes, 4096);
  EXPECT_FALSE(o.pack_cpu_tensors);
  EXPECT_TRUE(o.use_background_thread);
}

TEST(Catalog, WhatAppliesWhere) {
  EXPECT_EQ(strategy_catalog().front().name, kBaselineStrategy);
  EXPECT_EQ(unsupported_reason(*find_strategy("to"), Direction::kH2H, false), "");
  EXPECT_EQ(unsupported_reason(*find_strategy("pin_to_nb"), Direction::kH2H, false),
            "needs a CUDA device");
  EXPECT_NE(unsupported_reason(*find_strategy("pin_to_nb"), Direction::kD2H, true), "");
  EXPECT_NE(unsupported_reason(*find_strategy("memcpy_batch"), Direction::kH2H, true), "");
  EXPECT_EQ(unsupported_reason(*find_strategy("engine_no_thread"), Direction::kH2H, false), "");
  EXPECT_NE(unsupported_reason(*find_strategy("engine_pinned_out"), Direction::kH2D, true), "")
      << "its option changes only GPU->CPU copies";
  EXPECT_EQ(unsupported_reason(*find_strategy("engine_pinned_out"), Direction::kD2H, true), "");
}

class HostToHost : public testing::TestWithParam<std::string> {};

TEST_P(HostToHost, CopiesFaithfully) {
  const auto strategy = make_strategy(GetParam(), mtc::CopyOptions{});
  strategy->prepare(kH2H);
  const c10::IValue in = make_batch();
  strategy->start(in);
  const c10::IValue out = strategy->finish();
  const auto mismatch = verify_copy(in, out, kCpu);
  EXPECT_FALSE(mismatch) << mismatch->describe();
}

TEST_P(HostToHost, MeasuresWithTheCaseRunner) {
  CaseRunner runner(make_strategy(GetParam(), mtc::CopyOptions{}), kH2H, one(make_batch()),
                    Pattern::kHot, -1);
  const CaseSettings settings = fast_settings();
  runner.prepare();
  runner.warmup(settings.warmup);
  runner.verify();
  ASSERT_TRUE(runner.ok());
  measure_rounds(runner, settings, settings.fixed_samples > 0 ? 1 : 2);
  const Entry e = runner.entry(settings, WorkloadSize{9, 1000});
  EXPECT_EQ(e.status, EntryStatus::kOk) << e.reason;
  EXPECT_EQ(e.verified, true);
  EXPECT_GE(e.wall.count, 6);  // two rounds of at least three
  EXPECT_EQ(e.rounds.rounds, 2);
  EXPECT_EQ(e.pattern, "hot");
  // Two rounds give a finite interval around the median. Its width may be 0: samples of a copy
  // this short can repeat to the nanosecond, and did in a suite run on the loaded 2-core machine.
  EXPECT_TRUE(std::isfinite(e.rounds.interval.high));
  EXPECT_LE(e.rounds.interval.low, e.rounds.median);
  EXPECT_GE(e.rounds.interval.high, e.rounds.median);
  EXPECT_FALSE(e.gpu);
  EXPECT_FALSE(e.exposed);
  EXPECT_GT(e.wall.median, 0.0);
  EXPECT_LE(e.caller_blocked.median, e.wall.max);
  EXPECT_EQ(e.target, "cpu");
}

INSTANTIATE_TEST_SUITE_P(CpuStrategies, HostToHost,
                         testing::Values("to", "to_nb", "engine", "engine_no_pack",
                                         "engine_no_pinned", "engine_no_thread"));

// Returns a copy with one bit flipped: what verification exists to catch.
class FlippingStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "flipping"; }
  void prepare(const Route&) override {}
  void start(const c10::IValue& input) override {
    bool flipped = false;
    output_ = map_tensors(input, [&](const at::Tensor& t) {
      at::Tensor copy = t.clone();
      if (!flipped && copy.nbytes() > 0) {
        static_cast<unsigned char*>(copy.data_ptr())[0] ^= 0x80;
        flipped = true;
      }
      return copy;
    });
  }
  c10::IValue finish() override { return std::exchange(output_, c10::IValue()); }

 private:
  c10::IValue output_;
};

TEST(CaseRunner, AFlippedBitFailsVerificationAndIsNotMeasured) {
  CaseRunner runner(std::make_unique<FlippingStrategy>(), kH2H, one(make_batch()), Pattern::kHot,
                    -1);
  runner.prepare();
  runner.verify();
  EXPECT_FALSE(runner.ok());
  const Entry e = runner.entry(fast_settings(), WorkloadSize{});
  EXPECT_EQ(e.status, EntryStatus::kVerificationFailed);
  EXPECT_EQ(e.verified, false);
  EXPECT_NE(e.reason.find("values differ"), std::string::npos) << e.reason;
  EXPECT_EQ(e.wall.count, 0);
}

TEST(CaseRunner, OverlapModeReportsTheExposedCopy) {
  CaseSettings settings = fast_settings();
  settings.overlap_s = 200e-6;
  CaseRunner runner(make_strategy("to", mtc::CopyOptions{}), kH2H, one(make_batch()), Pattern::kHot,
                    -1);
  runner.prepare();
  measure_rounds(runner, settings, settings.fixed_samples > 0 ? 1 : 2);
  const Entry e = runner.entry(settings, WorkloadSize{9, 1000});
  ASSERT_TRUE(e.exposed);
  EXPECT_GE(e.wall.min, 200e-6);
  EXPECT_LT(e.exposed->median, e.wall.median);
}

TEST(CaseRunner, FixedCountForProfiling) {
  CaseSettings settings = fast_settings();
  settings.fixed_samples = 7;
  settings.stopping.min_samples = 100;
  CaseRunner runner(make_strategy("to", mtc::CopyOptions{}), kH2H, one(make_batch()), Pattern::kHot,
                    -1);
  runner.prepare();
  measure_rounds(runner, settings, settings.fixed_samples > 0 ? 1 : 2);
  const Entry e = runner.entry(settings, WorkloadSize{});
  EXPECT_EQ(e.wall.count, 7);
  EXPECT_EQ(e.rounds.rounds, 1);
}

TEST(BenchRunner, HostToHostWithoutAGpu) {
  RunPlan plan;
  plan.directions = {Direction::kH2H};
  plan.strategies = {"to", "pin_to_nb", "engine"};
  plan.cuda_device_count = 0;
  plan.settings = fast_settings();
  Progress progress(false);
  const RunOutcome outcome = run_benchmarks(one(make_batch()), plan, {}, progress);
  ASSERT_EQ(outcome.entries.size(), 3u);
  EXPECT_EQ(outcome.entries[0].status, EntryStatus::kOk) << outcome.entries[0].reason;
  EXPECT_EQ(outcome.entries[1].status, EntryStatus::kSkipped);
  EXPECT_EQ(outcome.entries[1].reason, "needs a CUDA device");
  EXPECT_EQ(outcome.entries[2].status, EntryStatus::kOk) << outcome.entries[2].reason;
  EXPECT_EQ(outcome.entries[2].device, -1);
  ASSERT_TRUE(outcome.entries[2].engine.is_object());
  EXPECT_TRUE(outcome.entries[2].engine["options"]["pack_cpu_tensors"].get<bool>());
  EXPECT_EQ(outcome.entries[2].engine["stats"]["tensors"], 9);
  EXPECT_TRUE(outcome.entries[2].engine["pinned_pool"]["reserved_bytes"].is_number());
  EXPECT_TRUE(outcome.entries[2].engine["steps_median_us"]["traverse"].is_number());
  for (const Entry& e : {outcome.entries[0], outcome.entries[2]}) {
    EXPECT_GE(e.rounds.rounds, 2);
    EXPECT_LE(e.rounds.rounds, 3);
    EXPECT_NE(e.stop_reason, "none");
  }
  // Interleaved: both cases ran the same rounds, so the speedup is paired per round.
  EXPECT_EQ(outcome.entries[0].rounds.rounds, outcome.entries[2].rounds.rounds);
}

TEST(BenchRunner, EveryPatternGetsItsEntries) {
  RunPlan plan;
  plan.directions = {Direction::kH2H};
  plan.strategies = {"to", "engine"};
  plan.settings = fast_settings();
  plan.settings.patterns = {Pattern::kHot, Pattern::kStep};
  plan.settings.gap_s = 1e-4;
  Progress progress(false);
  const RunOutcome outcome =
      run_benchmarks({make_batch(), make_batch(), make_batch()}, plan, {}, progress);
  ASSERT_EQ(outcome.entries.size(), 4u);
  EXPECT_EQ(outcome.entries[0].pattern, "hot");
  EXPECT_EQ(outcome.entries[2].pattern, "step");
  EXPECT_EQ(outcome.entries[3].strategy, "engine");
  for (const Entry& e : outcome.entries) EXPECT_EQ(e.status, EntryStatus::kOk) << e.reason;
}

TEST(BenchRunner, ProfileModeKeepsTableOrder) {
  RunPlan plan;
  plan.directions = {Direction::kH2H};
  plan.strategies = {"to", "pin_to_nb", "engine"};
  plan.settings = fast_settings();
  plan.settings.fixed_samples = 3;
  plan.profile = true;
  Progress progress(false);
  const RunOutcome outcome = run_benchmarks(one(make_batch()), plan, {}, progress);
  ASSERT_EQ(outcome.entries.size(), 3u);
  EXPECT_EQ(outcome.entries[0].strategy, "to");
  EXPECT_EQ(outcome.entries[0].wall.count, 3);
  EXPECT_EQ(outcome.entries[1].strategy, "pin_to_nb");
  EXPECT_EQ(outcome.entries[2].stop_reason, "fixed_count");
}

TEST(Routes, WhatEachDirectionMeans) {
  std::string why;
  EXPECT_FALSE(route_for(Direction::kH2D, -1, 0, why));
  EXPECT_EQ(why, "needs a CUDA device");
  EXPECT_FALSE(route_for(Direction::kD2D, 0, 1, why));
  EXPECT_NE(why.find("two GPUs"), std::string::npos);
  const auto d2d = route_for(Direction::kD2D, 1, 2, why);
  ASSERT_TRUE(d2d);
  EXPECT_EQ(d2d->source, c10::Device(c10::kCUDA, 1));
  EXPECT_EQ(d2d->target, c10::Device(c10::kCUDA, 0));
  const auto d2h = route_for(Direction::kD2H, 0, 1, why);
  ASSERT_TRUE(d2h);
  EXPECT_TRUE(d2h->target.is_cpu());
}

// On the GPU host: every strategy, both directions, verified.
class OnGpu : public testing::TestWithParam<std::tuple<std::string, Direction>> {};

TEST_P(OnGpu, VerifiesAndMeasures) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto& [name, direction] = GetParam();
  std::string why;
  const auto route = route_for(direction, 0, cuda_device_count(), why);
  if (!route) GTEST_SKIP() << why;
  const std::string reason = unsupported_reason(*find_strategy(name), direction, true);
  if (!reason.empty()) GTEST_SKIP() << reason;
  auto strategy = make_strategy(name, mtc::CopyOptions{});
  if (const std::string r = strategy->unsupported_reason(*route); !r.empty()) GTEST_SKIP() << r;
  CaseRunner runner(std::move(strategy), *route, one(input_for(make_batch(), direction, 0)),
                    Pattern::kHot, 0);
  const CaseSettings settings = fast_settings();
  runner.prepare();
  runner.warmup(2);
  runner.verify();
  measure_rounds(runner, settings, settings.fixed_samples > 0 ? 1 : 2);
  const Entry e = runner.entry(settings, WorkloadSize{9, 1000});
  EXPECT_EQ(e.status, EntryStatus::kOk) << e.reason;
  EXPECT_EQ(e.verified, true);
  ASSERT_TRUE(e.gpu);
  EXPECT_GT(e.gpu->median, 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    AllStrategies, OnGpu,
    testing::Combine(testing::Values("to", "to_nb", "pin_to_nb", "transfer_stream", "memcpy_batch",
                                     "engine", "engine_no_pack", "engine_no_pinned",
                                     "engine_no_thread", "engine_pinned_out"),
                     testing::Values(Direction::kH2D, Direction::kD2H, Direction::kD2D)),
    [](const auto& test) {
      return std::get<0>(test.param) + "_" + std::string(to_string(std::get<1>(test.param)));
    });

}  // namespace
}  // namespace mtc::bench
