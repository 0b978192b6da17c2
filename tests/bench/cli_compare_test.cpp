// `mtc-bench compare` through run_cli: its exit codes and files, on the synthetic reports of
// tests/compare/data (see tests/compare/make_fixtures.py).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "temp_dir.h"

namespace mtc::bench {
namespace {

using testing_support::Ran;
using testing_support::TempDir;

std::string data(const std::string& name) { return std::string(MTC_COMPARE_DATA) + "/" + name; }

Ran compare(const std::string& baseline, const std::string& candidate,
            std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"compare", data(baseline), data(candidate)};
  args.insert(args.end(), extra.begin(), extra.end());
  return testing_support::run(std::move(args));
}

TEST(CliCompare, SameIsExitZero) {
  const Ran r = compare("base.json", "same.json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("0 SLOWER, 0 FASTER, 0 UNSURE, 6 SAME"), std::string::npos) << r.out;
}

TEST(CliCompare, FailOnDecidesWhatExitsOne) {
  EXPECT_EQ(compare("base.json", "slower.json").code, 1);
  EXPECT_EQ(compare("base.json", "slower.json", {"--fail-on", "faster"}).code, 0);
  EXPECT_EQ(compare("base.json", "slower.json", {"--fail-on", "none"}).code, 0);
  EXPECT_EQ(compare("base.json", "faster.json").code, 0);
  EXPECT_EQ(compare("base.json", "faster.json", {"--fail-on", "faster"}).code, 1);
  EXPECT_EQ(compare("base.json", "faster.json", {"--fail-on", "any"}).code, 1);
  EXPECT_EQ(compare("base.json", "slower.json", {"--threshold", "15"}).code, 0);
  EXPECT_EQ(
      compare("base.json", "slower.json", {"--threshold", "15", "--threshold-metric", "speedup=5"})
          .code,
      1);
  EXPECT_EQ(compare("ab/baseline", "ab/candidate").code, 1);
  EXPECT_EQ(compare("aa/baseline", "aa/candidate").code, 0);
}

TEST(CliCompare, BadInputIsExitTwo) {
  Ran r = compare("base.json", "v1.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("v1.json: /schema_version: schema version 1"), std::string::npos) << r.err;
  r = compare("base.json", "h200.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--ignore-device"), std::string::npos) << r.err;
  EXPECT_EQ(compare("base.json", "h200.json", {"--ignore-device"}).code, 0);
  EXPECT_EQ(compare("base.json", "missing.json").code, 2);
  EXPECT_EQ(compare("base.json", "same.json", {"--threshold", "five"}).code, 2);
  EXPECT_EQ(compare("base.json", "same.json", {"--fail-on", "sometimes"}).code, 2);
  EXPECT_EQ(compare("ab/baseline", "ab/baseline").code, 2);
}

// Each hung (a pipe, a folder linked into itself twice) or was compared as if measured (a
// damaged report); each is now one line and exit 2. The command line's contradictions too.
TEST(CliCompare, InputsThatHungOrWereComparedAnywayAreOneLineExitTwo) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "pipe.json").c_str(), 0600), 0);
  const std::string loop = dir.make_dir("loop");
  std::ofstream(loop + "/a.json") << std::ifstream(data("base.json")).rdbuf();
  ASSERT_EQ(symlink(loop.c_str(), (loop + "/x").c_str()), 0);
  ASSERT_EQ(symlink(loop.c_str(), (loop + "/y").c_str()), 0);
  nlohmann::json damaged = nlohmann::json::parse(std::ifstream(data("base.json")));
  damaged["runs"][0]["results"][1]["direction"] = "sideways";
  std::ofstream(dir / "damaged.json") << damaged.dump();
  const auto one_line = [](const Ran& r, const std::string& says) {
    EXPECT_EQ(r.code, 2) << r.err;
    // On the first line: a usage error's second is the --help hint.
    EXPECT_LT(r.err.find(says), r.err.find('\n')) << r.err;
  };
  // A report's fault is a report error: "config error" sent users looking for a config.
  one_line(testing_support::run({"compare", data("base.json"), dir / "pipe.json"}),
           "mtc-bench: report error: " + (dir / "pipe.json") + ": cannot open: not a regular file");
  one_line(testing_support::run({"compare", data("base.json"), dir / "damaged.json"}),
           "damaged.json: /runs/0/results/1/direction: expected h2d, d2h, d2d or h2h");
  one_line(compare("base.json", "same.json",
                   {"--baseline-kind", "fresh", "--threshold-metric", "over_memcpy_batch=50"}),
           "--threshold-metric over_memcpy_batch: not judged against a fresh baseline");
  // The folder walk ends, each report read once: the same as comparing the report itself.
  const Ran looped = testing_support::run({"compare", data("base.json"), loop});
  EXPECT_EQ(looped.code, 0) << looped.err;
  EXPECT_NE(looped.out.find("6 SAME"), std::string::npos) << looped.out;
}

TEST(CliCompare, WritesMarkdownAndJson) {
  TempDir dir;
  const Ran r =
      compare("stored.json", "slower.json", {"--md", dir / "c.md", "--json", dir / "c.json"});
  // A stored baseline: the speedups over `to` only, 9 % lower, within their 30 %.
  EXPECT_EQ(r.code, 0) << r.err;
  std::stringstream md;
  md << std::ifstream(dir / "c.md").rdbuf();
  EXPECT_NE(md.str().find("compared on same-run ratios only"), std::string::npos) << md.str();
  const auto doc = nlohmann::json::parse(std::ifstream(dir / "c.json"));
  EXPECT_EQ(doc["baseline_kind"], "stored");
  EXPECT_EQ(doc["exit_code"], 0);
  EXPECT_EQ(doc["cases"].size(), 2u);
  EXPECT_EQ(doc["cases"][0]["metric"], "speedup");
  EXPECT_EQ(compare("base.json", "same.json", {"--md", "/no/such/folder/c.md"}).code, 2);
}

std::string read_text(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

// compare's outputs go through the run's report files: never over an input (`compare A B --md A`
// destroyed the baseline), never onto a named pipe (`--md` to one hung), whole or not at all.
TEST(CliCompare, OutputsNeverReplaceInputsOrWhatIsNotARegularFile) {
  TempDir dir;
  const std::string base = dir / "base.json";
  std::ofstream(base) << read_text(data("base.json"));
  const std::string folder = dir.make_dir("candidates");
  const std::string same = folder + "/same.json";
  std::ofstream(same) << read_text(data("same.json"));
  const auto refused = [](const Ran& r, const std::string& part) {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  };
  refused(testing_support::run({"compare", base, same, "--md", base}),
          "--md " + base + ": the same file as baseline " + base);
  refused(testing_support::run({"compare", base, folder, "--json", same}),
          "the same file as candidate " + same);
  refused(testing_support::run({"compare", base, same, "--md", dir / "c", "--json", dir / "c"}),
          "one output would replace the other");
  const std::string pipe = dir / "pipe.md";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0644), 0);
  refused(testing_support::run({"compare", base, same, "--md", pipe}), "it is a named pipe");
  EXPECT_EQ(read_text(base), read_text(data("base.json")));
  EXPECT_EQ(read_text(same), read_text(data("same.json")));
}

}  // namespace
}  // namespace mtc::bench
