#include "runner/cli/parse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "errors.h"

namespace mtc::bench {
namespace {

using Strings = std::vector<std::string>;

TEST(Parse, Assignment) {
  const Assignment a = parse_assignment("samples=64");
  EXPECT_EQ(a.name, "samples");
  EXPECT_EQ(a.value, "64");
  EXPECT_EQ(parse_assignment("/bench/warmup = 3").name, "/bench/warmup");
  EXPECT_EQ(parse_assignment("name=").value, "");
  EXPECT_EQ(parse_assignment("expr=a=b").value, "a=b");
  EXPECT_THROW(parse_assignment("samples"), UsageError);
  EXPECT_THROW(parse_assignment("=3"), UsageError);
}

TEST(Parse, Sweep) {
  const SweepAxis axis = parse_sweep("samples=1,4,16,64");
  EXPECT_EQ(axis.name, "samples");
  EXPECT_EQ(axis.values, (Strings{"1", "4", "16", "64"}));
  EXPECT_THROW(parse_sweep("samples"), UsageError);
  EXPECT_THROW(parse_sweep("samples=1,,2"), UsageError);
  EXPECT_THROW(parse_sweep("samples="), UsageError);
}

// A value of a list or an object is swept whole: the split was at every comma, so
// '/directions=["h2h"],["h2d","h2h"]' gave a value `["h2d"` (a config error about a string).
TEST(Parse, SweepValuesAreSplitOutsideJsonsBracketsAndStrings) {
  EXPECT_EQ(parse_sweep(R"(/directions=["h2h"], ["h2d","h2h"])").values,
            (std::vector<std::string>{R"(["h2h"])", R"(["h2d","h2h"])"}));
  EXPECT_EQ(parse_sweep(R"(/x={"a": [1, 2], "b": 3},"c,d","e\",f",4)").values,
            (std::vector<std::string>{R"({"a": [1, 2], "b": 3})", R"("c,d")", R"("e\",f")", "4"}));
  EXPECT_THROW(parse_sweep("/x=[1,2],"), UsageError);  // an empty last value
}

TEST(Parse, OnOff) {
  for (const char* on : {"on", "ON", "true", "yes", "1", "enable", " on "})
    EXPECT_TRUE(parse_on_off("--engine-pack", on)) << on;
  for (const char* off : {"off", "False", "no", "0", "disable"})
    EXPECT_FALSE(parse_on_off("--engine-pack", off)) << off;
  try {
    parse_on_off("--engine-pack", "maybe");
    ADD_FAILURE() << "maybe taken";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--engine-pack maybe: expected on or off");
  }
}

TEST(Parse, ExpandSweepsIsTheCartesianProduct) {
  const auto points = expand_sweeps({parse_sweep("a=1,2"), parse_sweep("b=x,y,z")});
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points.front(), (Strings{"a=1", "b=x"}));
  EXPECT_EQ(points[1], (Strings{"a=1", "b=y"}));
  EXPECT_EQ(points.back(), (Strings{"a=2", "b=z"}));
}

TEST(Parse, NoSweepIsOneEmptyPoint) {
  const auto points = expand_sweeps({});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_TRUE(points.front().empty());
}

TEST(Parse, SweepingOneSettingTwiceIsAnError) {
  EXPECT_THROW(expand_sweeps({parse_sweep("a=1"), parse_sweep("a=2")}), UsageError);
}

TEST(Parse, Directions) {
  EXPECT_EQ(parse_directions({"h2d"}), std::vector<Direction>{Direction::kH2D});
  EXPECT_EQ(parse_directions({"d2h,h2d", "h2d"}),
            (std::vector<Direction>{Direction::kD2H, Direction::kH2D}));
  EXPECT_EQ(parse_directions({"all"}), all_directions());
  EXPECT_THROW(parse_directions({"h2x"}), UsageError);
  EXPECT_THROW(parse_directions({""}), UsageError);
}

TEST(Parse, Devices) {
  EXPECT_EQ(parse_devices({"0,1"}), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_devices({"1", "0"}), (std::vector<int>{1, 0}));
  EXPECT_THROW(parse_devices({"0,0"}), UsageError);
  EXPECT_THROW(parse_devices({"-1"}), UsageError);
  EXPECT_THROW(parse_devices({"gpu0"}), UsageError);
}

TEST(Parse, Bytes) {
  EXPECT_EQ(parse_bytes("4096"), 4096);
  EXPECT_EQ(parse_bytes("64KiB"), 64 << 10);
  EXPECT_EQ(parse_bytes("32 MiB"), 32 << 20);
  EXPECT_EQ(parse_bytes("1GiB"), int64_t{1} << 30);
  EXPECT_EQ(parse_bytes("16KB"), 16000);
  EXPECT_THROW(parse_bytes("0"), UsageError);
  EXPECT_THROW(parse_bytes("12parsecs"), UsageError);
  EXPECT_THROW(parse_bytes("MiB"), UsageError);
  EXPECT_THROW(parse_bytes("99999999999999GiB"), UsageError);
}

TEST(Parse, BytesTextIsTheInverse) {
  EXPECT_EQ(bytes_text(16), "16");
  EXPECT_EQ(bytes_text(32 << 20), "32MiB");
  EXPECT_EQ(bytes_text(1536), "1536");
  EXPECT_EQ(bytes_text(3LL << 30), "3GiB");
  for (int64_t bytes : {int64_t{1}, int64_t{4096}, int64_t{1} << 20, int64_t{5000}}) {
    EXPECT_EQ(parse_bytes(bytes_text(bytes)), bytes);
  }
}

TEST(Parse, Fraction) {
  EXPECT_DOUBLE_EQ(parse_fraction("0.005"), 0.005);
  EXPECT_DOUBLE_EQ(parse_fraction("0.5%"), 0.005);
  EXPECT_DOUBLE_EQ(parse_fraction("1"), 1.0);
  EXPECT_DOUBLE_EQ(parse_fraction("200%"), 2.0) << "the range is the setting's";
  EXPECT_THROW(parse_fraction("low"), UsageError);
}

// The command line's values meet the config's bounds (workload/bench_settings.h); NaN, which
// CLI11 reads as a number and no comparison refuses, is outside every range.
TEST(Parse, CheckedWithinTheSettingsBounds) {
  EXPECT_EQ(checked_within("--warmup", int64_t{1'000'000}, kWarmupBounds), 1'000'000);
  EXPECT_DOUBLE_EQ(checked_within("--timeout", 0.5, kTimeoutBounds), 0.5);
  const auto message = [](auto call) {
    try {
      call();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { checked_within("--warmup", int64_t{1'000'001}, kWarmupBounds); }),
            "--warmup 1000001: must be from 0 to 1000000");
  EXPECT_EQ(message([] { checked_within("--timeout", std::nan(""), kTimeoutBounds); }),
            "--timeout nan: must be above 0 and at most 86400");
  EXPECT_EQ(message([] { checked_within("--timeout", 0.0, kTimeoutBounds); }),
            "--timeout 0: must be above 0 and at most 86400");
  EXPECT_EQ(message([] { checked_within("--gap-us", HUGE_VAL, kGapUsBounds); }),
            "--gap-us inf: must be from 0 to 10000000");
}

TEST(Parse, SeedIsAWholeUint64NeitherClampedNorWrapped) {
  EXPECT_EQ(parse_seed("0"), 0u);
  EXPECT_EQ(parse_seed("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"18446744073709551616", "-1", "1e3", "", "0x10", "+3"}) {
    EXPECT_THROW(parse_seed(bad), UsageError) << bad;
  }
}

TEST(Parse, Strategies) {
  EXPECT_EQ(parse_strategies({"engine,to", "to"}), (Strings{"engine", "to"}));
  EXPECT_THROW(parse_strategies({"teleport"}), UsageError);
  EXPECT_THROW(parse_strategies({","}), UsageError);
}

TEST(Parse, Patterns) {
  EXPECT_EQ(parse_patterns({"hot,step"}), (std::vector<Pattern>{Pattern::kHot, Pattern::kStep}));
  EXPECT_EQ(parse_patterns({"step", "step"}), std::vector<Pattern>{Pattern::kStep});
  EXPECT_THROW(parse_patterns({"warm"}), UsageError);
  EXPECT_THROW(parse_patterns({""}), UsageError);
}

TEST(Parse, AbLabel) {
  const AbLabel label = parse_ab_label("pr-7:candidate:12");
  EXPECT_EQ(label.job, "pr-7");
  EXPECT_EQ(label.side, "candidate");
  EXPECT_EQ(label.round, 12);
  for (const char* bad : {"pr-7:candidate", ":b:1", "a::1", "a:b:", "a:b:-1", "a:b:x", "a:b:1:2"}) {
    EXPECT_THROW(parse_ab_label(bad), UsageError) << bad;
  }
}

TEST(Parse, EngineLibraries) {
  const auto libraries = parse_engine_libraries({"base=/a.so", "cand=/b.so"});
  EXPECT_EQ(libraries.at("base"), "/a.so");
  EXPECT_EQ(libraries.at("cand"), "/b.so");
  EXPECT_THROW(parse_engine_libraries({"base"}), UsageError);
  EXPECT_THROW(parse_engine_libraries({"base="}), UsageError);
  EXPECT_THROW(parse_engine_libraries({"a b=/a.so"}), UsageError);
  EXPECT_THROW(parse_engine_libraries({"a=/a.so", "a=/b.so"}), UsageError);
}

TEST(Parse, CpuList) {
  EXPECT_EQ(parse_cpu_list("0-3,8"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parse_cpu_list("5"), std::vector<int>{5});
  for (const char* bad : {"", "3-1", "a", "1,,2", "-1", "0-"})
    EXPECT_THROW(parse_cpu_list(bad), UsageError) << bad;
}

}  // namespace
}  // namespace mtc::bench
