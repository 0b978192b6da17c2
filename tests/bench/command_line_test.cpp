#include "runner/cli/command_line.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>

#include "runner/commands/make_run_plan.h"
#include "workload/bench_settings.h"

namespace mtc::bench {
namespace {

struct Parsed {
  ParseResult result;
  std::string out;
  std::string err;
};

Parsed parse(std::vector<std::string> args) {
  args.insert(args.begin(), "mtc-bench");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out;
  std::ostringstream err;
  ParseResult result = parse_command_line(static_cast<int>(argv.size()), argv.data(), out, err);
  return {std::move(result), out.str(), err.str()};
}

// Each `--config x.json EXTRA...` exits 2 with "mtc-bench: error: " and its expected text.
void expect_usage_errors(
    const std::vector<std::pair<std::vector<std::string>, std::string>>& extras_and_errors) {
  for (const auto& [extra, expected] : extras_and_errors) {
    std::vector<std::string> args{"--config", "x.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Parsed p = parse(args);
    EXPECT_EQ(p.result.exit_code, 2) << testing::PrintToString(args);
    EXPECT_NE(p.err.find("mtc-bench: error: " + expected), std::string::npos) << p.err;
  }
}

TEST(CommandLine, ConfigAlone) {
  const Parsed p = parse({"--config", "configs/streampetr.json"});
  ASSERT_TRUE(p.result.command_line);
  const CommandLine& cl = *p.result.command_line;
  EXPECT_EQ(cl.command, Command::kRun);
  EXPECT_EQ(cl.run.config_path, "configs/streampetr.json");
  EXPECT_FALSE(cl.run.devices);
  EXPECT_FALSE(cl.run.warmup);
  EXPECT_FALSE(cl.run.engine.pack);
  EXPECT_FALSE(cl.run.round_cpus);
  EXPECT_FALSE(cl.run.profile_samples);
  EXPECT_FALSE(cl.run.min_rounds);
  EXPECT_TRUE(cl.run.engine_libraries.empty());
  EXPECT_EQ(cl.arguments.size(), 3u);
}

TEST(CommandLine, EveryRoundAndHostOverride) {
  const Parsed p = parse({"-c",           "x.json",   "--pattern",         "step,step-busy",
                          "--inputs",     "3",        "--gap-us",          "50",
                          "--gap-mode",   "busy",     "--gap-touch-bytes", "4MiB",
                          "--min-rounds", "2",        "--max-rounds",      "4",
                          "--round-time", "0.01",     "--processes",       "2",
                          "--pin-cpu",    "0-1",      "--round-cpus",      "1",
                          "--ab-label",   "j:base:1", "--engine-lib",      "base=/lib/a.so"});
  ASSERT_TRUE(p.result.command_line) << p.err;
  const RunOptions& o = p.result.command_line->run;
  EXPECT_EQ(*o.patterns, (std::vector<Pattern>{Pattern::kStep, Pattern::kStepBusy}));
  EXPECT_EQ(*o.gap_mode, "busy");
  EXPECT_EQ(*o.gap_touch_bytes, int64_t{4} << 20);
  EXPECT_EQ(*o.inputs, 3);
  EXPECT_DOUBLE_EQ(*o.gap_us, 50.0);
  EXPECT_EQ(*o.min_rounds, 2);
  EXPECT_EQ(*o.max_rounds, 4);
  EXPECT_DOUBLE_EQ(*o.round_time_s, 0.01);
  EXPECT_EQ(*o.processes, 2);
  EXPECT_EQ(o.pin_cpu, "0-1");
  EXPECT_EQ(*o.round_cpus, 1);
  EXPECT_EQ(o.ab_label->side, "base");
  EXPECT_EQ(o.engine_libraries.at("base"), "/lib/a.so");
}

// The limits meet the config's in the plan, which checks them (run_plan_test).
TEST(CommandLine, RoundLimitsAreLeftToThePlan) {
  const Parsed p = parse({"-c", "x.json", "--min-rounds", "5", "--max-rounds", "3"});
  ASSERT_TRUE(p.result.command_line) << p.err;
}

// Each default --help shows is read from the struct that holds it.
TEST(CommandLine, HelpShowsTheStructsDefaults) {
  const Parsed p = parse({"--help"});
  const BenchSettings bench;
  for (const std::string& needle :
       {fmt::format("(default: the config's bench.warmup, else {})", bench.warmup),
        fmt::format("(default: the config's bench.min_time_s, else {})", bench.min_time_s),
        fmt::format("(default: the config's bench.noise_target, else {})", bench.noise_target),
        fmt::format("(default: the config's bench.max_rounds, else {})", bench.max_rounds),
        fmt::format("(default: the config's bench.gap_us, else {})", bench.gap_us),
        fmt::format("Samples per case with --profile (default {})", ProfileSettings{}.samples),
        fmt::format("{} short rounds per case", QuickSettings{}.rounds)}) {
    EXPECT_NE(p.out.find(needle), std::string::npos) << needle;
  }
}

TEST(CommandLine, EveryOverride) {
  const Parsed p = parse({"-c",
                          "x.json",
                          "--devices",
                          "0,1",
                          "--direction",
                          "h2d,d2h",
                          "--strategy",
                          "to,engine",
                          "--warmup",
                          "2",
                          "--min-samples",
                          "20",
                          "--min-time",
                          "0.1",
                          "--noise-target",
                          "1%",
                          "--timeout",
                          "3",
                          "--overlap-us",
                          "250",
                          "--seed",
                          "7",
                          "--json",
                          "r.json",
                          "--md",
                          "r.md",
                          "--quiet",
                          "--raw-samples",
                          "--set",
                          "samples=4",
                          "--set",
                          "/bench/inputs=3",
                          "--sweep",
                          "repeat=1,2",
                          "--engine-pack",
                          "off",
                          "--engine-pinned-staging",
                          "false",
                          "--engine-background-thread",
                          "on",
                          "--engine-alignment",
                          "64",
                          "--engine-max-chunk",
                          "1MiB"});
  ASSERT_TRUE(p.result.command_line) << p.err;
  const RunOptions& o = p.result.command_line->run;
  EXPECT_EQ(*o.devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(*o.directions, (std::vector<Direction>{Direction::kH2D, Direction::kD2H}));
  EXPECT_EQ(*o.strategies, (std::vector<std::string>{"to", "engine"}));
  EXPECT_EQ(*o.warmup, 2);
  EXPECT_EQ(*o.min_samples, 20);
  EXPECT_DOUBLE_EQ(*o.min_time_s, 0.1);
  EXPECT_DOUBLE_EQ(*o.noise_target, 0.01);
  EXPECT_DOUBLE_EQ(*o.timeout_s, 3.0);
  EXPECT_DOUBLE_EQ(*o.overlap_us, 250.0);
  EXPECT_EQ(*o.seed, 7u);
  EXPECT_EQ(o.json_path, "r.json");
  EXPECT_EQ(o.md_path, "r.md");
  EXPECT_TRUE(o.quiet);
  EXPECT_TRUE(o.raw_samples);
  EXPECT_EQ(o.sets, (std::vector<std::string>{"samples=4", "/bench/inputs=3"}));
  ASSERT_EQ(o.sweeps.size(), 1u);
  EXPECT_EQ(o.sweeps[0].values, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(o.engine.pack, false);
  EXPECT_EQ(o.engine.pinned_staging, false);
  EXPECT_EQ(o.engine.background_thread, true);
  EXPECT_EQ(o.engine.alignment_bytes, 64);
  EXPECT_EQ(o.engine.max_chunk_bytes, 1 << 20);
}

TEST(CommandLine, HelpTeachesAndExitsZero) {
  const Parsed p = parse({"--help"});
  EXPECT_FALSE(p.result.command_line);
  EXPECT_EQ(p.result.exit_code, 0);
  for (const char* needle :
       {"--config", "--sweep", "Exit codes", "h2d", "engine_no_pack", "Examples", "nsys"}) {
    EXPECT_NE(p.out.find(needle), std::string::npos) << needle;
  }
}

TEST(CommandLine, UsageErrorsExitTwo) {
  const std::vector<std::vector<std::string>> bad{
      {},                                             // nothing to run
      {"--config", "x.json", "--direction", "up"},    // unknown direction
      {"--config", "x.json", "--devices", "a"},       // bad device
      {"--config", "x.json", "--strategy", "magic"},  // unknown strategy
      {"--config", "x.json", "--set", "novalue"},     // malformed --set
      {"--config", "x.json", "--sweep", "a=1", "--sweep", "a=2"},
      {"--config", "x.json", "--warmup", "-1"},
      {"--config", "x.json", "--warmup", "many"},
      {"--config", "x.json", "--noise-target", "3"},
      {"--config", "x.json", "--engine-max-chunk", "lots"},
      {"--config", "x.json", "--input", "b.pt"},
      {"--config", "x.json", "--no-such-option"},
      {"--config", "x.json", "--engine-lib", "nolabel"},
      {"--config", "x.json", "--engine-lib", "a=1", "--engine-lib", "a=2"},
      {"--config", "x.json", "--pin-cpu", "3-1"},
      {"--config", "x.json", "--ab-label", "bad"},
      {"--config", "x.json", "--round-cpus", "-1"},
      {"--config", "x.json", "--gap-mode", "nap"},
      {"--config", "x.json", "--gap-touch-bytes", "lots"},
      {"--config", "x.json", "--gap-touch-bytes", "32"},
      {"--config", "x.json", "--inputs", "1025"},
      {"--config", "x.json", "--processes", "65"},
      {"--config", "x.json", "--pattern", "warm"},
      {"--config", "x.json", "--processes", "2", "--profile"},
      // An empty value reads as "not given" (an unset variable): no report, and no word.
      {"--config", "x.json", "--json", ""},
      {"--config", "x.json", "--md", ""},
      {"--config", "x.json", "--pin-cpu", ""},
      {"--config", ""},
      {"--input", ""},
      // Not standard output, as other tools read it: a file named "-" was written.
      {"--config", "x.json", "--json", "-"},
      {"compare", "a.json", "b.json", "--md", "-"},
      // CLI11's own words named no choice.
      {"--config", "x.json", "--engine-pack", "maybe"},
      {"compare", "a.json", "b.json", "--json", ""},
      {"compare", "a.json", "b.json", "--threshold", ""},
      {"validate"},
  };
  for (const auto& args : bad) {
    const Parsed p = parse(args);
    EXPECT_FALSE(p.result.command_line) << testing::PrintToString(args);
    EXPECT_EQ(p.result.exit_code, 2) << testing::PrintToString(args);
    EXPECT_FALSE(p.err.empty()) << testing::PrintToString(args);
  }
}

// Every value the config bounds is bounded alike on the command line, NaN included (CLI11 reads
// "nan" as a number: --round-time nan measured one round of a million samples), and each error
// is one line that begins as every other error does and names the option and the value.
TEST(CommandLine, ValuesOutsideTheConfigsBoundsAreOneLineErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"--timeout", "nan"}, "--timeout nan: must be above 0 and at most 86400"},
      {{"--timeout", "0"}, "--timeout 0: must be above 0"},
      {{"--min-time", "nan"}, "--min-time nan: must be from 0 to 86400"},
      {{"--round-time", "nan"}, "--round-time nan: must be from 0 to 86400"},
      {{"--round-time", "inf"}, "--round-time inf: must be from 0 to 86400"},
      {{"--overlap-us", "nan"}, "--overlap-us nan: must be from 0 to 86400000000"},
      {{"--gap-us", "nan"}, "--gap-us nan: must be from 0 to 10000000"},
      {{"--warmup", "1000001"}, "--warmup 1000001: must be from 0 to 1000000"},
      {{"--warmup", "-1"}, "--warmup -1: must be from 0 to 1000000"},
      {{"--min-samples", "0"}, "--min-samples 0: must be from 1 to 10000000"},
      {{"--noise-target", "3"}, "--noise-target 3: must be from 0 to 1"},
      // As written, not as read: "--noise-target 2" named a value nobody gave.
      {{"--noise-target", "200%"}, "--noise-target 200%: must be from 0 to 1"},
      {{"--profile-samples", "0"}, "--profile-samples 0: must be from 1 to 10000000"},
      {{"--round-cpus", "5000"}, "--round-cpus 5000: must be from 0 to 4096"},
      {{"--seed", "18446744073709551616"}, "--seed 18446744073709551616: expected a whole number"},
      {{"--seed", "-1"}, "--seed -1: expected a whole number"},
      {{"--warmup", "many"}, "--warmup many: expected a whole number from 0 to 1000000"},
      // Read by CLI11 before: clamped to 2^63 - 1 in the message, and refused in its own words.
      {{"--warmup", "99999999999999999999"},
       "--warmup 99999999999999999999: must be from 0 to 1000000"},
      {{"--warmup", "nan"}, "--warmup nan: expected a whole number from 0 to 1000000"},
      {{"--max-rounds", "2.5"}, "--max-rounds 2.5: expected a whole number"},
      // `--warmup "$N"` with N unset, as the options that take a path say it.
      {{"--warmup", ""}, "--warmup: an empty value (an unset variable?)"},
      {{"--gap-us", " "}, "--gap-us: an empty value (an unset variable?)"},
      {{"--seed", ""}, "--seed: an empty value (an unset variable?)"},
      {{"--direction", "h2d", "--direction", ""},
       "--direction: an empty value (an unset variable?)"},
      {{"--set", ""}, "--set: an empty value (an unset variable?)"},
      {{"--engine-max-chunk", ""}, "--engine-max-chunk: an empty value (an unset variable?)"},
      {{"--warmup", "+-3"}, "--warmup +-3: expected a whole number"},
      {{"--gap-us", "+"}, "--gap-us +: expected a number"},
      {{"--round-time", "1e400"}, "--round-time 1e400: must be from 0 to 86400"},
      {{"--gap-touch-bytes", "32"}, "--gap-touch-bytes 32: must be 64 to 16GiB"},
      // The engine's own limit (mtc::kMaxPackedAlignmentBytes): exit 3 at run time before.
      {{"--engine-alignment", "2GiB"}, "--engine-alignment 2GiB: must be 1 to 1GiB"},
      // The shared byte-count parser knows no option: its errors are given the option's name.
      {{"--gap-touch-bytes", "0"}, "--gap-touch-bytes 0: byte count out of range"},
      {{"--engine-max-chunk", "0"}, "--engine-max-chunk 0: byte count out of range"},
      {{"--engine-alignment", "1.5KiB"}, "--engine-alignment 1.5KiB: expected a whole number"},
  };
  for (const auto& [extra, expected] : bad) {
    std::vector<std::string> args{"--config", "x.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Parsed p = parse(args);
    EXPECT_EQ(p.result.exit_code, 2) << testing::PrintToString(args);
    const std::string first_line = p.err.substr(0, p.err.find('\n'));
    EXPECT_EQ(first_line.rfind("mtc-bench: error: ", 0), 0u) << first_line;
    EXPECT_NE(first_line.find(expected), std::string::npos) << first_line;
    EXPECT_LT(first_line.size(), 200u) << "no 309-digit bound";
  }
  const Parsed p = parse({"--config", "x.json", "--seed", "18446744073709551615"});
  ASSERT_TRUE(p.result.command_line) << p.err;
  EXPECT_EQ(p.result.command_line->run.seed, UINT64_MAX);
  // Numbers as CLI11 took them: a leading plus, an exponent where a fraction is allowed.
  const Parsed ok = parse({"--config", "x.json", "--warmup", "+3", "--min-time", "2.5e1"});
  ASSERT_TRUE(ok.result.command_line) << ok.err;
  EXPECT_EQ(ok.result.command_line->run.warmup, 3);
  EXPECT_EQ(ok.result.command_line->run.min_time_s, 25.0);
}

// --sweep used to win silently over a --set of the same setting, and --seed over both.
TEST(CommandLine, ASettingGivenTwoWaysIsRefused) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"--set", "samples=2", "--sweep", "samples=1,4"},
       "--sweep samples and --set samples=2: both set samples; give one of them"},
      {{"--sweep", "/seed=1,2", "--seed", "3"}, "--seed and --sweep /seed: both set /seed"},
      {{"--set", "/seed=1", "--seed", "3"}, "--seed and --set /seed=1: both set /seed"},
      // An option wins at every point: the points' labels would lie.
      {{"--sweep", "/bench/warmup=1,2", "--warmup", "3"},
       "--sweep /bench/warmup and --warmup: the option sets /bench/warmup at every point"},
      {{"--sweep", "/bench/max_rounds=5,9", "--quick"},
       "--sweep /bench/max_rounds and --quick: the option sets /bench/max_rounds"},
      {{"--sweep", "/directions=[\"h2d\"],[\"d2h\"]", "--direction", "h2h"},
       "--sweep /directions and --direction"},
      // The option won over a --set of the same setting without a word, and the report's
      // resolved config kept the --set value.
      {{"--set", "/bench/warmup=7", "--warmup", "1"},
       "--set /bench/warmup=7 and --warmup: the option sets /bench/warmup too"},
      {{"--set", "/bench/min_rounds=7", "--quick"},
       "--set /bench/min_rounds=7 and --quick: the option sets /bench/min_rounds too"},
  };
  expect_usage_errors(bad);
  EXPECT_TRUE(
      parse({"--config", "x.json", "--set", "samples=2", "--set", "samples=3"}).result.command_line)
      << "a later --set overrides an earlier one, as documented";
}

// "all" asks for what the machine has; the four directions named one by one ask for each.
TEST(CommandLine, DirectionAllIsToldApartFromTheFourNamed) {
  const Parsed all = parse({"--config", "x.json", "--direction", "h2h,all"});
  ASSERT_TRUE(all.result.command_line) << all.err;
  EXPECT_TRUE(all.result.command_line->run.all_directions);
  const Parsed four = parse({"--config", "x.json", "--direction", "h2d,d2h,d2d,h2h"});
  ASSERT_TRUE(four.result.command_line) << four.err;
  EXPECT_FALSE(four.result.command_line->run.all_directions);
  EXPECT_EQ(four.result.command_line->run.directions->size(), 4u);
}

// --profile measures a fixed count in one round: an option that ends rounds or cases did nothing
// beside it (--profile --timeout 2 ran past a minute), and --profile-samples nothing without it.
TEST(CommandLine, OptionsThatWouldDoNothingBesideProfileAreRefused) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"--profile-samples", "5"},
       "--profile-samples: counts the samples of --profile; give --profile too"},
      {{"--profile", "--timeout", "2"},
       "--profile and --timeout: --profile measures --profile-samples samples per case in one "
       "round, so --timeout would do nothing"},
      {{"--profile", "--max-rounds", "9"}, "--profile and --max-rounds:"},
      {{"--profile", "--noise-target", "1%"}, "--profile and --noise-target:"},
  };
  expect_usage_errors(bad);
  const Parsed ok = parse({"--config", "x.json", "--profile", "--profile-samples", "50"});
  ASSERT_TRUE(ok.result.command_line) << ok.err;
  EXPECT_EQ(*ok.result.command_line->run.profile_samples, 50);
}

TEST(CommandLine, List) {
  Parsed p = parse({"list"});
  ASSERT_TRUE(p.result.command_line);
  EXPECT_EQ(p.result.command_line->command, Command::kList);
  EXPECT_TRUE(p.result.command_line->list.strategies);
  EXPECT_TRUE(p.result.command_line->list.configs);
  p = parse({"list", "--strategies"});
  EXPECT_FALSE(p.result.command_line->list.configs);
}

TEST(CommandLine, Validate) {
  const Parsed p = parse({"validate", "a.json", "b.json", "--set", "samples=2", "--no-build"});
  ASSERT_TRUE(p.result.command_line) << p.err;
  const CommandLine& cl = *p.result.command_line;
  EXPECT_EQ(cl.command, Command::kValidate);
  EXPECT_EQ(cl.validate.config_paths, (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_FALSE(cl.validate.build);
}

}  // namespace
}  // namespace mtc::bench
