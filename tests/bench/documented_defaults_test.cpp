// The defaults the docs write against the code's: docs/cli.md's option table, the `bench` table
// of configs/README.md and the descriptions in configs/spec.schema.json. Each default lives in
// one struct (BenchSettings, CaseSettings, the plan's QuickSettings and ProfileSettings) and
// --help reads it from there; the docs repeat it by hand, so this test fails when the two part.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runner/cli/command_line.h"
#include "runner/cli/parse.h"
#include "runner/measure/run_plan.h"
#include "workload/bench_settings.h"
#include "workload/config.h"

namespace mtc::bench {
namespace {

using nlohmann::json;
using Row = std::vector<std::string>;

std::string read_source(const std::string& relative) {
  std::ifstream in(std::string(MTC_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << "cannot read " << relative;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::string without_backticks(std::string text) {
  std::erase(text, '`');
  return trim(text);
}

// The rows of the first markdown table of the section `heading` (a whole line), header row
// included, split into trimmed cells; "\|" inside a cell is a pipe, not a border.
std::vector<Row> table_after(const std::string& document, const std::string& heading) {
  std::istringstream lines(document);
  std::string line;
  while (std::getline(lines, line) && line != heading) {
  }
  EXPECT_EQ(line, heading) << "no heading " << heading;
  std::vector<Row> rows;
  while (std::getline(lines, line) && !line.starts_with("#")) {
    const bool in_table = line.starts_with("|");
    if (!in_table && rows.empty()) continue;  // the section's text before its table
    if (!in_table) break;
    if (line.starts_with("| ---") || line.starts_with("|---")) continue;
    Row cells{""};
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        cells.back() = trim(cells.back());
        cells.emplace_back();
      } else if (line[i] != '\\' || i + 1 == line.size() || line[i + 1] != '|') {
        cells.back() += line[i];
      }
    }
    cells.pop_back();  // after the closing border
    rows.push_back(cells);
  }
  return rows;
}

// Every `--option` a text names.
std::set<std::string> long_options(const std::string& text) {
  static const std::regex option("--[a-z][a-z0-9-]*");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), option);
       it != std::sregex_iterator(); ++it) {
    names.insert(it->str());
  }
  return names;
}

// docs/cli.md's option table: option -> the default its row writes as "(default X)" (X up to
// the first ";", ":" or ")"). Rows without such a default are left out.
std::map<std::string, std::string> documented_option_defaults() {
  static const std::regex written(R"(\(default ([^;:)]+))");
  std::map<std::string, std::string> defaults;
  for (const Row& row : table_after(read_source("docs/cli.md"), "## Command line")) {
    std::smatch match;
    if (row.size() < 2 || !std::regex_search(row[1], match, written)) continue;
    const std::set<std::string> names = long_options(row[0]);
    EXPECT_EQ(names.size(), 1u) << "one option per row that writes a default: " << row[0];
    if (names.size() == 1) defaults[*names.begin()] = without_backticks(match[1].str());
  }
  return defaults;
}

// The code's default of each option docs/cli.md gives one, as --help prints it.
std::map<std::string, std::string> code_option_defaults() {
  const BenchSettings bench;
  const auto text = [](const auto& value) { return fmt::format("{}", value); };
  return {{"--devices", text(kDefaultDevice)},
          {"--pattern", fmt::format("{}", fmt::join(bench.patterns, ","))},
          {"--inputs", text(bench.inputs)},
          {"--gap-us", text(bench.gap_us)},
          {"--gap-mode", bench.gap_mode},
          {"--gap-touch-bytes", bytes_text(bench.gap_touch_bytes)},
          {"--warmup", text(bench.warmup)},
          {"--min-rounds", text(bench.min_rounds)},
          {"--max-rounds", text(bench.max_rounds)},
          {"--round-time", text(bench.round_time_s)},
          {"--min-samples", text(bench.min_samples)},
          {"--min-time", text(bench.min_time_s)},
          {"--noise-target", text(bench.noise_target)},
          {"--timeout", text(bench.timeout_s)},
          {"--processes", text(bench.processes)},
          {"--overlap-us", text(bench.overlap_us)},
          {"--round-cpus", text(CaseSettings{}.round_cpus)},
          {"--profile-samples", text(ProfileSettings{}.samples)}};
}

// Numbers compare as numbers ("15" and "15.0" agree), anything else as text.
bool same_value(const std::string& documented, const std::string& code) {
  const json a = json::parse(documented, nullptr, false);
  const json b = json::parse(code, nullptr, false);
  if (a.is_number() && b.is_number()) return a == b;
  return documented == code;
}

TEST(DocumentedDefaults, CliOptionTableMatchesTheCode) {
  const std::map<std::string, std::string> documented = documented_option_defaults();
  for (const auto& [option, code] : code_option_defaults()) {
    const auto it = documented.find(option);
    if (it == documented.end()) {
      ADD_FAILURE() << "docs/cli.md: " << option << " has no \"(default " << code << ")\"";
    } else {
      EXPECT_TRUE(same_value(it->second, code))
          << "docs/cli.md: " << option << " (default " << it->second << "), the code's is " << code;
    }
  }
  for (const auto& [option, value] : documented) {
    EXPECT_TRUE(code_option_defaults().contains(option))
        << "docs/cli.md gives " << option << " a default (" << value
        << ") this test does not know: add the code's to code_option_defaults()";
  }
}

TEST(DocumentedDefaults, QuickRoundsMatchTheCode) {
  static const std::regex rounds(R"((\d+) short rounds)");
  for (const Row& row : table_after(read_source("docs/cli.md"), "## Command line")) {
    if (row.front() != "`--quick`") continue;
    std::smatch match;
    ASSERT_TRUE(std::regex_search(row[1], match, rounds)) << row[1];
    EXPECT_EQ(std::stoll(match[1].str()), QuickSettings{}.rounds) << "docs/cli.md: --quick";
    return;
  }
  FAIL() << "docs/cli.md: no row for --quick";
}

// What the resolved config shows for a config without a "bench" object: every key, at its
// default (BenchSettings).
json resolved_bench_defaults() {
  return parse_config(R"({"structure": 1})", "inline.json").resolved["bench"];
}

// A default written in a doc against the code's. An empty list is written as what it means.
void expect_documented(const std::string& where, const std::string& key, const std::string& written,
                       const json& code) {
  const std::map<std::string, std::string> empty_means{
      {"strategies", "all"}, {"devices", fmt::format("[{}]", kDefaultDevice)}};
  const std::string text = without_backticks(written);
  if (code.is_array() && code.empty() && empty_means.contains(key)) {
    EXPECT_EQ(text, empty_means.at(key)) << where << ": " << key;
    return;
  }
  const json parsed = json::parse(text, nullptr, false);
  EXPECT_EQ(parsed, code) << where << ": " << key << " is documented as " << text
                          << ", the code's default is " << code.dump();
}

TEST(DocumentedDefaults, ConfigReadmeBenchTableMatchesBenchSettings) {
  const std::vector<Row> rows = table_after(read_source("configs/README.md"), "### `bench`");
  ASSERT_FALSE(rows.empty());
  const Row& header = rows.front();
  const auto column = std::find(header.begin(), header.end(), "default") - header.begin();
  ASSERT_LT(column, static_cast<std::ptrdiff_t>(header.size())) << "no default column";
  const json code = resolved_bench_defaults();
  std::set<std::string> documented;
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::string key = without_backticks(rows[i].front());
    documented.insert(key);
    ASSERT_TRUE(code.contains(key)) << "configs/README.md documents an unknown key " << key;
    expect_documented("configs/README.md", key, rows[i].at(static_cast<size_t>(column)), code[key]);
  }
  for (const auto& [key, value] : code.items()) {
    EXPECT_TRUE(documented.contains(key)) << "configs/README.md: bench." << key << " is missing";
  }
}

TEST(DocumentedDefaults, SchemaDescriptionsMatchBenchSettings) {
  const json schema = json::parse(read_source("configs/spec.schema.json"));
  const json& properties = schema["$defs"]["bench"]["properties"];
  static const std::regex written(R"(\(default (.+)\)\.?$)");
  const json code = resolved_bench_defaults();
  for (const auto& [key, value] : code.items()) {
    ASSERT_TRUE(properties.contains(key)) << "configs/spec.schema.json: bench." << key;
    const std::string description = properties[key].value("description", "");
    std::smatch match;
    if (!std::regex_search(description, match, written)) {
      ADD_FAILURE() << "configs/spec.schema.json: bench." << key << " names no default";
      continue;
    }
    expect_documented("configs/spec.schema.json", key, match[1].str(), value);
  }
}

// The schema's bounds are for editors; the parser and the command line read the same bounds from
// workload/bench_settings.h.
TEST(DocumentedDefaults, SchemaBoundsMatchTheSettingBounds) {
  const json schema = json::parse(read_source("configs/spec.schema.json"));
  const json& properties = schema["$defs"]["bench"]["properties"];
  const auto expect_bounds = [&](const std::string& key, const auto& bounds) {
    ASSERT_TRUE(properties.contains(key)) << "configs/spec.schema.json: bench." << key;
    const char* minimum = bounds.above_min ? "exclusiveMinimum" : "minimum";
    EXPECT_EQ(properties[key].value(minimum, json()), json(static_cast<double>(bounds.min)))
        << "bench." << key;
    EXPECT_EQ(properties[key].value("maximum", json()), json(static_cast<double>(bounds.max)))
        << "bench." << key;
  };
  expect_bounds("warmup", kWarmupBounds);
  expect_bounds("min_samples", kMinSamplesBounds);
  expect_bounds("min_time_s", kMinTimeBounds);
  expect_bounds("noise_target", kNoiseTargetBounds);
  expect_bounds("timeout_s", kTimeoutBounds);
  expect_bounds("overlap_us", kOverlapUsBounds);
  expect_bounds("inputs", kInputsBounds);
  expect_bounds("gap_us", kGapUsBounds);
  expect_bounds("gap_touch_bytes", kGapTouchBytesBounds);
  for (const char* key : {"min_rounds", "max_rounds"}) expect_bounds(key, kRoundsBounds);
  expect_bounds("round_time_s", kRoundTimeBounds);
  expect_bounds("processes", kProcessesBounds);
}

TEST(DocumentedDefaults, EveryOptionOfHelpIsInTheDocs) {
  const char* argv[] = {"mtc-bench", "--help"};
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_EQ(parse_command_line(2, argv, out, err).exit_code, 0);
  // An option line of CLI11's help starts with its names: "  -c,--config FILE  ...".
  std::set<std::string> listed;
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) {
    const std::string names = trim(line).substr(0, trim(line).find(' '));
    if (names.starts_with("-")) listed.merge(long_options(names));
  }
  EXPECT_TRUE(listed.contains("--config")) << out.str();
  std::set<std::string> documented;
  for (const Row& row : table_after(read_source("docs/cli.md"), "## Command line")) {
    documented.merge(long_options(row.front()));
  }
  for (const std::string& option : listed) {
    EXPECT_TRUE(documented.contains(option)) << "docs/cli.md's option table lacks " << option;
  }
}

}  // namespace
}  // namespace mtc::bench
