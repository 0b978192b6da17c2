#include "compare/comparison.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "errors.h"
#include "fixtures.h"

namespace mtc::bench::compare {
namespace {

using mtc::bench::testing_support::TempDir;
using testing_support::data;
using testing_support::edited;

Comparison run(const std::string& baseline, const std::string& candidate,
               CompareOptions options = {}) {
  return compare_reports(read_reports(baseline), read_reports(candidate), options);
}

Comparison run_fixtures(const std::string& baseline, const std::string& candidate,
                        CompareOptions options = {}) {
  return run(data(baseline), data(candidate), std::move(options));
}

// The names are views, not `const std::string&`: a reference returned from a call that bound
// temporaries to reference parameters reads to GCC 13 as possibly dangling (-Wdangling-reference).
const CaseResult& find(const Comparison& c, std::string_view pattern, std::string_view strategy,
                       Metric metric) {
  for (const CaseResult& r : c.cases) {
    if (r.key.pattern == pattern && r.key.strategy == strategy && r.metric == metric) return r;
  }
  throw std::runtime_error(fmt::format("no such case: {} {}", pattern, strategy));
}

int count(const Comparison& c, Verdict v) {
  return static_cast<int>(std::count_if(c.cases.begin(), c.cases.end(),
                                        [&](const CaseResult& r) { return r.verdict == v; }));
}

TEST(Comparison, EqualReportsAreSame) {
  const Comparison c = run_fixtures("base.json", "same.json");
  EXPECT_EQ(c.method, Method::kUnpaired);
  EXPECT_EQ(c.basis, BaselineKind::kFresh);
  // 4 wall cases + 2 engine speedups (`to` has none of its own).
  ASSERT_EQ(c.cases.size(), 6u);
  EXPECT_EQ(count(c, Verdict::kSame), 6);
  EXPECT_EQ(exit_code_for(c, FailOn::kSlower), 0);
  EXPECT_EQ(exit_code_for(c, FailOn::kAny), 0);
}

TEST(Comparison, TenPercentSlowerWithTightIntervalsIsSlower) {
  const Comparison c = run_fixtures("base.json", "slower.json");
  const CaseResult& wall = find(c, "hot", "engine", Metric::kWall);
  EXPECT_NEAR(wall.change.ratio, 1.10, 1e-12);
  EXPECT_EQ(wall.verdict, Verdict::kSlower);
  EXPECT_EQ(find(c, "step", "engine", Metric::kWall).verdict, Verdict::kSlower);
  // The speedup over `to` fell by the same factor: a lower speedup is also SLOWER.
  EXPECT_NEAR(find(c, "hot", "engine", Metric::kSpeedup).change.ratio, 1 / 1.10, 1e-12);
  EXPECT_EQ(find(c, "hot", "engine", Metric::kSpeedup).verdict, Verdict::kSlower);
  EXPECT_EQ(find(c, "hot", "to", Metric::kWall).verdict, Verdict::kSame);
  EXPECT_EQ(exit_code_for(c, FailOn::kSlower), 1);
  EXPECT_EQ(exit_code_for(c, FailOn::kFaster), 0);
  EXPECT_EQ(exit_code_for(c, FailOn::kAny), 1);
  EXPECT_EQ(exit_code_for(c, FailOn::kNone), 0);
}

TEST(Comparison, FasterFailsOnlyWhenAskedTo) {
  const Comparison c = run_fixtures("base.json", "faster.json");
  EXPECT_EQ(find(c, "hot", "engine", Metric::kWall).verdict, Verdict::kFaster);
  EXPECT_EQ(find(c, "hot", "engine", Metric::kSpeedup).verdict, Verdict::kFaster);
  EXPECT_EQ(exit_code_for(c, FailOn::kSlower), 0);
  EXPECT_EQ(exit_code_for(c, FailOn::kFaster), 1);
  EXPECT_EQ(exit_code_for(c, FailOn::kAny), 1);
}

TEST(Comparison, AnIntervalStraddlingTheThresholdIsUnsure) {
  const Comparison c = run_fixtures("base.json", "noisy.json");
  EXPECT_EQ(find(c, "hot", "engine", Metric::kWall).verdict, Verdict::kUnsure);
  EXPECT_EQ(find(c, "hot", "to", Metric::kWall).verdict, Verdict::kUnsure);  // no change, but +-8 %
  EXPECT_EQ(exit_code_for(c, FailOn::kAny), 0);                              // UNSURE fails nothing
}

TEST(Comparison, TooFewRoundsIsUnsureAndSaysTheMinimum) {
  const Comparison c = run_fixtures("one-round.json", "slower.json");
  const CaseResult& wall = find(c, "hot", "engine", Metric::kWall);
  EXPECT_EQ(wall.verdict, Verdict::kUnsure);
  EXPECT_EQ(wall.note, "1 round(s); a verdict needs 3");
}

TEST(Comparison, ThresholdsPerMetric) {
  CompareOptions options;
  options.threshold = 0.15;                            // the 10 % slowdown lies within it...
  options.metric_thresholds[Metric::kSpeedup] = 0.05;  // ...but not within this one
  const Comparison c = run_fixtures("base.json", "slower.json", options);
  EXPECT_EQ(find(c, "hot", "engine", Metric::kWall).verdict, Verdict::kSame);
  EXPECT_DOUBLE_EQ(find(c, "hot", "engine", Metric::kWall).threshold, 0.15);
  EXPECT_EQ(find(c, "hot", "engine", Metric::kSpeedup).verdict, Verdict::kSlower);
}

TEST(Comparison, UnmatchedAndSkippedCasesAreListed) {
  const Comparison c = run_fixtures("base.json", "extra.json");
  EXPECT_EQ(c.cases.size(), 6u);
  std::vector<std::string> listed;
  for (const Unmatched& u : c.unmatched)
    listed.push_back(u.side + ": " + case_label(u.key) + ": " + u.reason);
  EXPECT_EQ(listed, (std::vector<std::string>{
                        "baseline: streampetr hot d2d engine: skipped: needs two GPUs",
                        "baseline: streampetr step d2d engine: skipped: needs two GPUs",
                        "candidate: streampetr hot d2d engine: skipped: needs two GPUs",
                        "candidate: streampetr step d2d engine: skipped: needs two GPUs",
                        "candidate: streampetr hot h2d memcpy_batch: no match in the baseline"}));
}

// A candidate whose engine failed verification where the baseline measured it has no speed to
// judge; it is worse than any slowdown and fails the comparison (it passed as "not compared").
// A failure on the baseline side, or of a case the baseline did not measure, is only listed.
TEST(Comparison, ACandidateThatBrokeACaseTheBaselineMeasuredFails) {
  TempDir dir;
  const auto broke_engine_hot = [](nlohmann::json& d) {
    for (auto& result : d["runs"][0]["results"]) {
      if (result["strategy"] == "engine" && result["pattern"] == "hot" &&
          result["direction"] == "h2d") {
        result["status"] = "verification_failed";
        result["reason"] = "output differs at leaf 3";
      }
    }
  };
  const std::string broken = edited(dir, "broken.json", "base.json", broke_engine_hot);
  const Comparison c = run(data("base.json"), broken);
  const auto it = std::find_if(c.unmatched.begin(), c.unmatched.end(),
                               [](const Unmatched& u) { return u.broken; });
  ASSERT_NE(it, c.unmatched.end()) << "the broken case is not marked";
  EXPECT_EQ(it->side, "candidate");
  EXPECT_EQ(case_label(it->key), "streampetr hot h2d engine");
  EXPECT_EQ(exit_code_for(c, FailOn::kSlower), 1);
  EXPECT_EQ(exit_code_for(c, FailOn::kAny), 1);
  EXPECT_EQ(exit_code_for(c, FailOn::kNone), 0);
  EXPECT_EQ(exit_code_for(c, FailOn::kFaster), 0);
  // The same failure on the baseline's side is listed, not held against the candidate.
  const Comparison reversed = run(broken, data("base.json"));
  EXPECT_TRUE(std::none_of(reversed.unmatched.begin(), reversed.unmatched.end(),
                           [](const Unmatched& u) { return u.broken; }));
  EXPECT_EQ(exit_code_for(reversed, FailOn::kSlower), 0);
  // Nor is a failure both sides had: rounds of an A/B job, each side failing the case in one.
  for (const std::string side : {"baseline", "candidate"}) {
    dir.make_dir(side);
    for (int r = 0; r < 6; ++r) {
      const std::string round = "/round-" + std::to_string(r) + ".json";
      const bool fails = (side == "baseline" && r == 0) || (side == "candidate" && r == 1);
      edited(
          dir, side + round, "ab/" + side + round,
          fails ? std::function<void(nlohmann::json&)>(broke_engine_hot) : [](auto&) {});
    }
  }
  const Comparison shared = run(dir / "baseline", dir / "candidate");
  EXPECT_TRUE(std::none_of(shared.unmatched.begin(), shared.unmatched.end(),
                           [](const Unmatched& u) { return u.broken; }));
}

TEST(Comparison, ADifferentWorkloadDoesNotMatch) {
  TempDir dir;
  const std::string other = edited(dir, "other.json", "base.json", [](auto& d) {
    d["runs"][0]["workload"]["hash"] = "0000000000000000";
  });
  const Comparison c = run(data("base.json"), other);
  EXPECT_TRUE(c.cases.empty());
  EXPECT_EQ(exit_code_for(c, FailOn::kSlower), 2);  // nothing compared is bad input
}

TEST(Comparison, RefusesDifferentGpuModelsUnlessIgnored) {
  try {
    run_fixtures("base.json", "h200.json");
    FAIL() << "expected a refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "baseline was measured on NVIDIA H100 80GB HBM3 and the candidate on NVIDIA H200"),
        std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--ignore-device"), std::string::npos);
  }
  CompareOptions options;
  options.ignore_device = true;
  const Comparison c = run_fixtures("base.json", "h200.json", options);
  EXPECT_EQ(c.cases.size(), 6u);
  EXPECT_EQ(c.cases[0].candidate_device_model, "NVIDIA H200");
}

TEST(Comparison, PairedRoundsSeeThroughHostNoise) {
  // The host moves both sides by up to 25 % per round; the engine is 10 % slower in each.
  const Comparison c = run_fixtures("ab/baseline", "ab/candidate");
  EXPECT_EQ(c.method, Method::kPaired);
  EXPECT_EQ(c.ab_job, "fixture-ab");
  const CaseResult& wall = find(c, "hot", "engine", Metric::kWall);
  EXPECT_EQ(wall.change.rounds, 6);
  EXPECT_GT(wall.change.low, 1.09);
  EXPECT_LT(wall.change.high, 1.12);
  EXPECT_EQ(wall.verdict, Verdict::kSlower);
  EXPECT_EQ(find(c, "step", "engine", Metric::kSpeedup).verdict, Verdict::kSlower);
  EXPECT_EQ(find(c, "hot", "to", Metric::kWall).verdict, Verdict::kSame);
}

TEST(Comparison, PairedAaJobIsSame) {
  const Comparison c = run_fixtures("aa/baseline", "aa/candidate");
  EXPECT_EQ(c.method, Method::kPaired);
  EXPECT_EQ(count(c, Verdict::kSame), static_cast<int>(c.cases.size()));
}

TEST(Comparison, UnpairedRoundsOfTheSameJobAreRefused) {
  // Two sides of different jobs: not paired, and several reports per case are ambiguous.
  TempDir dir;
  const std::string base = dir.make_dir("base");
  for (int r = 0; r < 2; ++r) {
    edited(dir, "base/" + std::to_string(r) + ".json",
           "ab/baseline/round-" + std::to_string(r) + ".json",
           [](auto& d) { d["ab"]["job"] = "another-job"; });
  }
  EXPECT_THROW(run(base, data("ab/candidate")), UsageError);
}

TEST(Comparison, BothInputsTheSameSideIsRefused) {
  try {
    run_fixtures("ab/baseline", "ab/baseline");
    FAIL() << "expected a refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("both inputs are its `baseline` side"), std::string::npos)
        << e.what();
  }
}

TEST(Comparison, MissingRoundsAreNoted) {
  TempDir dir;
  const std::string cand = dir.make_dir("cand");
  for (int r = 0; r < 4; ++r) {  // rounds 4 and 5 never finished
    edited(dir, "cand/" + std::to_string(r) + ".json",
           "ab/candidate/round-" + std::to_string(r) + ".json", [](auto&) {});
  }
  const Comparison c = run(data("ab/baseline"), cand);
  const CaseResult& wall = find(c, "hot", "engine", Metric::kWall);
  EXPECT_EQ(wall.change.rounds, 4);
  EXPECT_EQ(wall.note, "2 round(s) measured on one side only");
  EXPECT_EQ(wall.verdict, Verdict::kSlower);
}

TEST(Comparison, PairedCasesWithoutACommonRoundAreListed) {
  const Comparison c = run(data("ab/baseline/round-0.json"), data("ab/candidate/round-1.json"));
  EXPECT_EQ(c.method, Method::kPaired);
  EXPECT_TRUE(c.cases.empty());
  ASSERT_FALSE(c.unmatched.empty());
  EXPECT_EQ(c.unmatched.back().reason, "no round of the A/B job measured it on both sides");
  EXPECT_EQ(exit_code_for(c, FailOn::kSlower), 2);
}

TEST(Comparison, StoredBaselineIsComparedOnSameRunRatiosAndSaysSo) {
  const Comparison c = run_fixtures("stored.json", "slower.json");
  EXPECT_EQ(c.basis, BaselineKind::kStored);
  EXPECT_FALSE(c.thresholds.contains(Metric::kWall));
  EXPECT_DOUBLE_EQ(c.thresholds.at(Metric::kSpeedup), 0.30);
  EXPECT_DOUBLE_EQ(c.thresholds.at(Metric::kOverMemcpyBatch), 0.55);
  // No wall time is judged: the speedups over `to` only (these reports have no memcpy_batch).
  ASSERT_EQ(c.cases.size(), 2u);
  for (const CaseResult& r : c.cases) EXPECT_EQ(r.metric, Metric::kSpeedup);
  EXPECT_EQ(find(c, "hot", "engine", Metric::kSpeedup).verdict, Verdict::kSame);  // -9 %, < 30 %
  std::string notes;
  for (const auto& n : c.notes) notes += n + "\n";
  EXPECT_NE(notes.find("stored baseline detected (hosts gpu-host-b vs gpu-host-a; days 2026-10-02 "
                       "vs 2026-11-20)"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("compared on same-run ratios only"), std::string::npos) << notes;
  EXPECT_NE(notes.find("measured spread between hosts"), std::string::npos) << notes;

  CompareOptions explicit_stored;
  explicit_stored.baseline_kind = BaselineKind::kStored;
  EXPECT_DOUBLE_EQ(
      run_fixtures("base.json", "slower.json", explicit_stored).thresholds.at(Metric::kSpeedup),
      0.30);
  CompareOptions fresh;
  fresh.baseline_kind = BaselineKind::kFresh;
  EXPECT_EQ(find(run_fixtures("stored.json", "slower.json", fresh), "hot", "engine", Metric::kWall)
                .verdict,
            Verdict::kSlower);
  CompareOptions given;
  given.threshold = 0.05;
  const Comparison tight = run_fixtures("stored.json", "slower.json", given);
  EXPECT_DOUBLE_EQ(tight.thresholds.at(Metric::kSpeedup), 0.05);
  EXPECT_EQ(find(tight, "hot", "engine", Metric::kSpeedup).verdict, Verdict::kSlower);
}

TEST(Comparison, AStoredBaselineFromASlowerHostDoesNotMoveTheRatios) {
  // Every time of the stored baseline is 40 % longer: a wall-time comparison would call the
  // candidate 29 % faster; the ratios, measured within each run, say nothing changed.
  const Comparison c = run_fixtures("stored-ratios.json", "ratios-same.json");
  EXPECT_EQ(c.basis, BaselineKind::kStored);
  // engine: speedup over `to` and over memcpy_batch, both patterns; memcpy_batch: over `to`.
  ASSERT_EQ(c.cases.size(), 6u);
  EXPECT_EQ(count(c, Verdict::kSame), 6);
  const CaseResult& over = find(c, "hot", "engine", Metric::kOverMemcpyBatch);
  EXPECT_NEAR(over.baseline, 1.1e-3 / 2.5e-4, 1e-9);
  EXPECT_NEAR(over.change.ratio, 1.0, 1e-9);
  EXPECT_TRUE(larger_is_better(Metric::kOverMemcpyBatch));
}

TEST(Comparison, AStoredBaselineCatchesAChangeBeyondTheHostsSpread) {
  const Comparison c = run_fixtures("stored-ratios.json", "ratios-slower.json");
  // The engine 1.5x slower: its speedup over `to` fell to 1/1.5, beyond the 30 % band.
  const CaseResult& speedup = find(c, "hot", "engine", Metric::kSpeedup);
  EXPECT_NEAR(speedup.change.ratio, 1 / 1.5, 1e-9);
  EXPECT_EQ(speedup.verdict, Verdict::kSlower);
  EXPECT_EQ(find(c, "step", "engine", Metric::kSpeedup).verdict, Verdict::kSlower);
  // Over memcpy_batch the same fall lies inside that ratio's wider 55 % band.
  EXPECT_NE(find(c, "hot", "engine", Metric::kOverMemcpyBatch).verdict, Verdict::kSlower);
  EXPECT_EQ(find(c, "hot", "memcpy_batch", Metric::kSpeedup).verdict, Verdict::kSame);
  EXPECT_EQ(exit_code_for(c, FailOn::kSlower), 1);
}

// A case that cannot be judged, and whose note says so in `words`.
void expect_unsure_saying(const CaseResult& result, std::string_view words) {
  EXPECT_EQ(result.verdict, Verdict::kUnsure);
  EXPECT_NE(result.note.find(words), std::string::npos) << result.note;
}

// A copy of `source` whose runs' settings `edit` changes.
std::string with_settings(const TempDir& dir, const std::string& name, const std::string& source,
                          const std::function<void(nlohmann::json&)>& edit) {
  return edited(dir, name, source, [&](nlohmann::json& d) {
    for (auto& run : d["runs"]) edit(run["settings"]);
  });
}

TEST(Comparison, StepsMeasuredWithAnotherGapOrOtherInputsAreUnsureWhateverTheirIntervals) {
  const TempDir dir;
  for (const auto& [name, edit] :
       std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>>{
           {"gap.json", [](nlohmann::json& s) { s["gap_us"] = 0; }},
           {"inputs.json", [](nlohmann::json& s) { s["inputs"] = 1; }}}) {
    // Ten percent slower everywhere: the hot cases are judged, the steps cannot be.
    const Comparison c = run(data("base.json"), with_settings(dir, name, "slower.json", edit));
    SCOPED_TRACE(name);
    EXPECT_EQ(find(c, "hot", "engine", Metric::kWall).verdict, Verdict::kSlower);
    expect_unsure_saying(find(c, "step", "engine", Metric::kWall),
                         "measured differently: the baseline with a gap of 2000 us, 8 inputs in "
                         "turn, the candidate with");
    EXPECT_EQ(find(c, "step", "engine", Metric::kSpeedup).verdict, Verdict::kUnsure);
    EXPECT_TRUE(std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) {
      return n.find("measured differently on the two sides") != std::string::npos;
    }));
  }
}

TEST(Comparison, CallerWorkBeforeEachWaitMustMatchInEveryPattern) {
  const TempDir dir;
  const Comparison c = run(data("base.json"), with_settings(dir, "overlap.json", "same.json",
                                                            [](auto& s) { s["overlap_us"] = 50; }));
  EXPECT_EQ(count(c, Verdict::kUnsure), static_cast<int>(c.cases.size()));
  expect_unsure_saying(find(c, "hot", "engine", Metric::kWall),
                       "the baseline with nothing, the candidate with 50 us of caller work");
}

TEST(Comparison, StepsThatFreedThePreviousOutputAtAnotherPointAreUnsure) {
  const TempDir dir;
  auto freed = [](const char* point) {
    return [point](nlohmann::json& s) { s["step_frees_previous_output"] = point; };
  };
  const std::string after_start =
      with_settings(dir, "start.json", "same.json", freed("after_start"));
  const std::string after_copy = with_settings(dir, "copy.json", "base.json", freed("after_copy"));
  // Both recorded and different; a report without the field that was written before the free
  // moved (2026-11-27 16:54 UTC: base.json is of 2026-11-20) freed it after the copy.
  for (const std::string& baseline : {after_copy, data("base.json")}) {
    const Comparison c = run(baseline, after_start);
    SCOPED_TRACE(baseline);
    EXPECT_EQ(find(c, "hot", "engine", Metric::kWall).verdict, Verdict::kSame);
    expect_unsure_saying(find(c, "step", "engine", Metric::kWall),
                         "the candidate's once the next copy had started");
  }
  // Recorded alike on both sides, or on neither by two older reports: judged.
  const std::string also_start =
      with_settings(dir, "start2.json", "base.json", freed("after_start"));
  EXPECT_EQ(count(run(also_start, after_start), Verdict::kSame), 6);
  EXPECT_EQ(count(run_fixtures("base.json", "same.json"), Verdict::kSame), 6);
  // Without the field and written after the free moved, a report does not say: its steps are
  // judged only against another such report.
  auto later = [](nlohmann::json& d) { d["context"]["date"] = "2026-11-27T17:00:00Z"; };
  const std::string unsaid = edited(dir, "unsaid.json", "same.json", later);
  const std::string unsaid_too = edited(dir, "unsaid2.json", "base.json", later);
  // (Reports of two days: a stored baseline, judged on the speedup over `to`.)
  const Comparison against_older = run(data("base.json"), unsaid);
  expect_unsure_saying(find(against_older, "step", "engine", Metric::kSpeedup),
                       "the baseline's steps freed the previous output after the copy, the "
                       "candidate's where the report does not say");
  EXPECT_EQ(find(run(unsaid, after_start), "step", "engine", Metric::kSpeedup).verdict,
            Verdict::kUnsure);
  EXPECT_EQ(count(run(unsaid_too, unsaid), Verdict::kSame), 6);
}

// A preloaded allocator moves the engine's times by a quarter: cases measured under another
// malloc are not judged. The C library's of any version, and a report without the field (all of
// them ran with glibc's), count alike.
TEST(Comparison, CasesMeasuredUnderAnotherMallocAreUnsure) {
  const TempDir dir;
  auto with_malloc = [&](const std::string& name, const std::string& source, const char* lib) {
    return edited(dir, name, source, [lib](nlohmann::json& d) { d["context"]["malloc"] = lib; });
  };
  const std::string jemalloc = with_malloc("jemalloc.json", "same.json", "libjemalloc.so.2");
  const Comparison c = run(data("base.json"), jemalloc);
  EXPECT_EQ(count(c, Verdict::kUnsure), static_cast<int>(c.cases.size()));
  expect_unsure_saying(find(c, "hot", "engine", Metric::kWall),
                       "the baseline with the C library's malloc, the candidate with "
                       "libjemalloc.so.2");
  const std::string glibc = with_malloc("glibc.json", "same.json", "libc.so.6 (glibc 2.39)");
  const std::string older = with_malloc("older.json", "base.json", "libc.so.6 (glibc 2.36)");
  EXPECT_EQ(count(run(data("base.json"), glibc), Verdict::kSame), 6);
  EXPECT_EQ(count(run(older, glibc), Verdict::kSame), 6);
  const std::string jemalloc_too = with_malloc("jemalloc2.json", "base.json", "libjemalloc.so.2");
  EXPECT_EQ(count(run(jemalloc_too, jemalloc), Verdict::kSame), 6);
}

}  // namespace
}  // namespace mtc::bench::compare
