#include "runner/cli/command_line.h"

#include <gtest/gtest.h>

#include <sstream>

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

TEST(CommandLine, ConfigAlone) {
  const Parsed p = parse({"--config", "configs/streampetr.json"});
  ASSERT_TRUE(p.result.command_line);
  const CommandLine& cl = *p.result.command_line;
  EXPECT_EQ(cl.command, Command::kRun);
  EXPECT_EQ(cl.run.config_path, "configs/streampetr.json");
  EXPECT_FALSE(cl.run.devices);
  EXPECT_FALSE(cl.run.warmup);
  EXPECT_FALSE(cl.run.engine.pack);
  EXPECT_EQ(cl.arguments.size(), 3u);
}

TEST(CommandLine, EveryOverride) {
  const Parsed p = parse({"-c", "x.json", "--devices", "0,1", "--direction", "h2d,d2h",
                          "--strategy", "to,engine", "--warmup", "2", "--min-samples", "20",
                          "--min-time", "0.1", "--noise-target", "1%", "--timeout", "3",
                          "--overlap-us", "250", "--seed", "7", "--json", "r.json", "--md", "r.md",
                          "--quiet", "--raw-samples", "--set", "samples=4", "--set", "/bench/warmup=1",
                          "--sweep", "samples=1,2", "--engine-pack", "off", "--engine-pinned-staging",
                          "false", "--engine-background-thread", "on", "--engine-alignment", "64",
                          "--engine-max-chunk", "1MiB"});
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
  EXPECT_EQ(o.sets, (std::vector<std::string>{"samples=4", "/bench/warmup=1"}));
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
  for (const char* needle : {"--config", "--sweep", "Exit codes", "h2d", "engine_no_pack", "Examples", "nsys"}) {
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
      {"validate"},
  };
  for (const auto& args : bad) {
    const Parsed p = parse(args);
    EXPECT_FALSE(p.result.command_line) << testing::PrintToString(args);
    EXPECT_EQ(p.result.exit_code, 2) << testing::PrintToString(args);
    EXPECT_FALSE(p.err.empty()) << testing::PrintToString(args);
  }
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
