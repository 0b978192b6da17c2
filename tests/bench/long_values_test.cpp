// A value written long (a pasted blob, a runaway variable) is quoted in its error by its start and
// its length (shown.h): a 5,000-byte --set value made a 15 KB error line. Short values are quoted
// whole, as before.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "errors.h"
#include "runner/cli/parse.h"
#include "shown.h"
#include "temp_dir.h"

namespace mtc::bench {
namespace {

using testing_support::TempDir;

const std::string kLong(5000, 'x');

std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

// The first line of what the program printed on stderr, and that it exited 2.
std::string first_error_line(const std::vector<std::string>& args) {
  const testing_support::Ran r = testing_support::run(args);
  EXPECT_EQ(r.code, 2) << r.err.substr(0, 400);
  return r.err.substr(0, r.err.find('\n'));
}

TEST(Shown, ShortTextIsAsIsAndLongTextItsStartAndLength) {
  EXPECT_EQ(shown(""), "");
  EXPECT_EQ(shown(std::string(kShownBytes, 'a')), std::string(kShownBytes, 'a'));
  EXPECT_EQ(shown(std::string(kShownBytes + 1, 'a')),
            std::string(kShownBytes, 'a') + "... (" + std::to_string(kShownBytes + 1) + " bytes)");
  EXPECT_EQ(shown(kLong), std::string(kShownBytes, 'x') + "... (5000 bytes)");
  EXPECT_EQ(shown(kLong, kShownPathBytes), std::string(kShownPathBytes, 'x') + "... (5000 bytes)");
  EXPECT_EQ(shown_path(kLong), shown(kLong, kShownPathBytes));
  // "é" is two bytes: the 60th byte is the first half of one, which is left out whole.
  std::string accented = "x";
  for (int i = 0; i < 40; ++i) accented += "\u00e9";
  EXPECT_EQ(shown(accented), accented.substr(0, 59) + "... (81 bytes)");
}

// A control character in a value would split the one-line error: each is written as an escape.
TEST(Shown, ControlCharactersAreEscaped) {
  EXPECT_EQ(shown("h2d\nrm\r\tx"), "h2d\\nrm\\r\\tx");
  EXPECT_EQ(shown(std::string("a\0b\x1b\x7f", 5)), "a\\x00b\\x1b\\x7f");
  EXPECT_EQ(shown(std::string(kShownBytes, '\n') + "x"), [] {
    std::string escaped;
    for (size_t i = 0; i < kShownBytes; ++i) escaped += "\\n";
    return escaped;
  }() + "... (" + std::to_string(kShownBytes + 1) + " bytes)");
  const std::string line = first_error_line({"--direction", "h2d\nrm -rf"});
  EXPECT_NE(line.find("--direction h2d\\nrm -rf: expected"), std::string::npos) << line;
}

// A list is named by its first kShownItems items, each shown(), and its length.
TEST(Shown, AListNamesItsFirstItemsAndItsLength) {
  EXPECT_EQ(shown_list(std::vector<std::string>{}), "");
  EXPECT_EQ(shown_list(std::vector<std::string>{"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(shown_list(std::vector<std::string>{"a", "b"}, " vs "), "a vs b");
  std::vector<std::string> many;
  for (int i = 0; i < 12; ++i) many.push_back(std::to_string(i));
  EXPECT_EQ(shown_list(many), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9... (12 in all)");
  many.resize(kShownItems);
  EXPECT_EQ(shown_list(many).find("in all"), std::string::npos);
  EXPECT_EQ(shown_list(std::vector<std::string>{"a\nb", kLong}), "a\\nb, " + shown(kLong));
}

// Each parser's message names the option (or the text, for the shared parsers, whose caller adds
// the option) and the reason, in one line of under 300 bytes.
TEST(LongValues, EachParserQuotesTheStartAndTheLength) {
  struct Case {
    std::function<void()> call;
    std::string start;
    std::string reason;
  };
  const SettingBounds<int64_t> warmup = kWarmupBounds;
  const std::vector<Case> cases{
      {[] { parse_assignment(kLong); }, "--set x", "expected NAME=VALUE"},
      {[] { parse_assignment("=" + kLong); }, "--set =x", "empty NAME"},
      {[] { parse_sweep(kLong); }, "--sweep x", "expected NAME=V1,V2,..."},
      {[] { parse_sweep("a=1,," + kLong); }, "--sweep a=1,,x", "empty value"},
      {[] {
         expand_sweeps({parse_sweep(kLong + "=1"), parse_sweep(kLong + "=2")});
       },
       "--sweep: 'x", "is swept twice"},
      {[] { parse_directions({kLong}); }, "--direction x", "expected h2d, d2h, d2d, h2h or all"},
      {[] { parse_devices({kLong}); }, "--devices x", "expected GPU indices"},
      {[] { parse_bytes(kLong); }, "x", "expected a byte count"},
      {[] { parse_bytes("1" + kLong); }, "1x", "unknown unit 'x"},
      {[] { parse_fraction(kLong); }, "x", "expected a fraction"},
      {[] { checked_within("--noise-target", 9.0, kNoiseTargetBounds, "9" + kLong); },
       "--noise-target 9x", "must be from 0 to 1"},
      {[warmup] { parse_within("--warmup", kLong, warmup); }, "--warmup x",
       "expected a whole number"},
      {[warmup] { parse_within("--warmup", std::string(5000, '9'), warmup); }, "--warmup 999",
       "must be from 0 to 1000000"},
      {[] { parse_on_off("--engine-pack", kLong); }, "--engine-pack x", "expected on or off"},
      {[] { parse_seed(kLong); }, "--seed x", "expected a whole number"},
      {[] { parse_patterns({kLong}); }, "--pattern x", "expected hot, step or step-busy"},
      {[] { parse_gap_mode_choice(kLong); }, "--gap-mode x", "expected sleep, busy or both"},
      {[] { parse_ab_label(kLong); }, "--ab-label x", "needs three parts"},
      {[] { parse_engine_libraries({kLong}); }, "--engine-lib x", "expected LABEL=PATH"},
      {[] { parse_cpu_list(kLong); }, "CPU list x", "expected numbers and ranges"},
      {[] { parse_strategies({kLong}); }, "--strategy x", "unknown strategy"},
  };
  for (const Case& c : cases) {
    const std::string message = message_of(c.call);
    EXPECT_TRUE(message.starts_with(c.start)) << message;
    EXPECT_NE(message.find(c.reason), std::string::npos) << message;
    EXPECT_NE(message.find(" bytes)"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    // --strategy's reason lists the strategies known, some 240 bytes of it.
    EXPECT_LT(message.size(), c.start == "--strategy x" ? 400u : 300u) << message;
  }
}

TEST(LongValues, AShortValueIsQuotedWhole) {
  const std::string sixty(kShownBytes, 'h');
  EXPECT_EQ(message_of([&] { parse_directions({sixty}); }),
            "--direction " + sixty + ": expected h2d, d2h, d2d, h2h or all");
  EXPECT_EQ(message_of([] { parse_assignment("samples"); }), "--set samples: expected NAME=VALUE");
  EXPECT_EQ(message_of([] { parse_bytes("12parsecs"); }),
            "12parsecs: unknown unit 'parsecs' (B, KiB, MiB, GiB, KB, MB, GB)");
}

class LongValuesOnTheCommandLine : public testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(config_) << R"({"name": "t", "params": {"samples": 2},
      "structure": {"tensor": {"dtype": "int8", "shape": [{"param": "samples"}]}}})";
  }
  TempDir dir_;
  const std::string config_ = dir_ / "t.json";
};

// The options' own errors: one line under 300 bytes, naming the option and the reason.
TEST_F(LongValuesOnTheCommandLine, AnOptionsErrorIsOneShortLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--direction", kLong}, "expected h2d, d2h, d2d, h2h or all"},
      {{"--noise-target", "9" + kLong + "%"}, "expected a fraction"},
      {{"--set", kLong}, "expected NAME=VALUE"},
      {{"--warmup", kLong}, "expected a whole number"},
      {{"--set", "/bench/warmup=" + kLong, "--warmup", "1"}, "the option sets /bench/warmup too"},
  };
  for (const auto& [extra, reason] : cases) {
    std::vector<std::string> args{"--config", config_};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::string line = first_error_line(args);
    EXPECT_TRUE(line.starts_with("mtc-bench: error: " + extra.front() + " ")) << line;
    EXPECT_NE(line.find(reason), std::string::npos) << line;
    EXPECT_NE(line.find(" bytes)"), std::string::npos) << line;
    EXPECT_LT(line.size(), 300u) << line;
  }
  // CLI11's own error, cut as a whole line: the hint after it stays.
  const testing_support::Ran r = testing_support::run({"--config", config_, "--" + kLong});
  EXPECT_EQ(r.code, 2);
  EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 400);
  EXPECT_NE(r.err.find("The following argument was not expected: --xxx"), std::string::npos);
  EXPECT_NE(r.err.find("\nRun with --help for more information."), std::string::npos);
}

// The config's errors quote the --set text, the name in it and the JSON pointer made of it: each
// bounded, so the line stays the same length however long the value grows.
TEST_F(LongValuesOnTheCommandLine, AConfigErrorDoesNotGrowWithTheValue) {
  const auto line_for = [&](size_t length) {
    const std::string name(length, 'n');
    return first_error_line({"--config", config_, "--set", name + "=1"});
  };
  const std::string line = line_for(5000);
  EXPECT_NE(line.find("unknown parameter 'nnn"), std::string::npos) << line;
  EXPECT_NE(line.find("/params/nnn"), std::string::npos) << line;
  EXPECT_LT(line.size(), kShownPathBytes + 300) << line;
  // Only the counts' digits grow: 5000 -> 50000 adds one to each of the three.
  EXPECT_EQ(line_for(50'000).size(), line.size() + 3) << line;

  const std::string key = first_error_line({"--config", config_, "--set", "/nope" + kLong + "=3"});
  EXPECT_NE(key.find("unknown key 'nopexxx"), std::string::npos) << key;
  EXPECT_EQ(key.find(std::string(kShownPathBytes + 1, 'x')), std::string::npos) << key;
}

// A config that declares thousands of names: an error lists ten of them and their number, where
// it listed all 5,000 (a 40 KB line).
TEST_F(LongValuesOnTheCommandLine, ManyDeclaredNamesAreNotAllListed) {
  const std::string file = dir_ / "many.json";
  {
    std::ofstream out(file);
    out << R"({"name": "t", "params": {)";
    for (int i = 0; i < 5000; ++i) out << (i ? ", " : "") << "\"p" << i << "\": 1";
    out << R"(}, "defs": {)";
    for (int i = 0; i < 5000; ++i)
      out << (i ? ", " : "") << "\"d" << i << R"(": {"tensor": {"dtype": "int8", "shape": [1]}})";
    out << R"(}, "structure": {"list": [{"ref": "d0"}]}})";
  }
  const std::vector<std::vector<std::string>> commands{
      {"--config", file, "--set", "nope=1"},
      {"--config", file, "--sweep", "nope=1,2"},
  };
  for (const std::vector<std::string>& args : commands) {
    const std::string line = first_error_line(args);
    EXPECT_NE(line.find("unknown parameter 'nope'"), std::string::npos) << line;
    EXPECT_NE(line.find("p0, p1, "), std::string::npos) << line;
    EXPECT_NE(line.find("... (5000 in all)"), std::string::npos) << line;
    EXPECT_LT(line.size(), 400u) << line.substr(0, 400);
  }
  std::ofstream(dir_ / "ref.json") << [&] {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.replace(text.rfind("\"d0\""), 4, "\"nope\"");
    return text;
  }();
  const std::string line = first_error_line({"--config", dir_ / "ref.json"});
  EXPECT_NE(line.find("unknown definition 'nope'"), std::string::npos) << line;
  EXPECT_NE(line.find("... (5000 in all)"), std::string::npos) << line;
  EXPECT_LT(line.size(), 400u) << line.substr(0, 400);
}

// A path is shown up to kShownPathBytes: its tail tells it from its neighbours.
TEST_F(LongValuesOnTheCommandLine, APathIsShownLongerButBounded) {
  const std::string folder = dir_ / std::string(150, 'd');
  const std::string at_limit = folder + "/" + std::string(kShownPathBytes - folder.size() - 1, 'c');
  EXPECT_EQ(at_limit.size(), kShownPathBytes);
  const std::string line = first_error_line({"--config", at_limit});
  EXPECT_NE(line.find(at_limit + ": cannot open"), std::string::npos) << line;

  const std::string long_path = dir_ / kLong;
  const std::string cut = first_error_line({"--config", long_path});
  EXPECT_NE(cut.find(long_path.substr(0, kShownPathBytes) + "... ("), std::string::npos) << cut;
  EXPECT_LT(cut.size(), 300u) << cut;
}

// nlohmann's parse error quotes what it last read: an unclosed string, the rest of the file.
TEST_F(LongValuesOnTheCommandLine, AJsonParseErrorIsCutAsAWhole) {
  const std::string file = dir_ / "unclosed.json";
  std::ofstream(file) << "{\"name\": \"" << kLong << "\n}";
  const std::vector<std::vector<std::string>> commands{{"--config", file}, {"compare", file, file}};
  for (const std::vector<std::string>& args : commands) {
    const std::string line = first_error_line(args);
    EXPECT_NE(line.find("parse error at line 2"), std::string::npos) << line;
    EXPECT_LT(line.size(), 400u) << line;
  }
}

}  // namespace
}  // namespace mtc::bench
