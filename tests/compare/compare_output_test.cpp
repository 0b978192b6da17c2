#include "compare/compare_output.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>

#include "fixtures.h"

namespace mtc::bench::compare {
namespace {

using mtc::bench::testing_support::TempDir;
using testing_support::data;
using testing_support::edited;

// What a reporter of type R shows of a comparison.
template <class R>
std::string shown(const Comparison& comparison, FailOn fail_on, int exit_code) {
  std::ostringstream out;
  R reporter(out);
  report_comparison(reporter, comparison, fail_on, exit_code);
  return out.str();
}

Comparison slower() {
  return compare_reports(read_reports(data("base.json")), read_reports(data("slower.json")), {});
}

TEST(CompareOutput, Formats) {
  EXPECT_EQ(format_change(1.102), "+10.2 %");
  EXPECT_EQ(format_change(0.9), "-10.0 %");
  Change c;
  c.low = 1.081;
  c.high = std::numeric_limits<double>::infinity();
  EXPECT_EQ(format_interval(c), "[+8.1 %, +inf]");
  EXPECT_EQ(format_value(Metric::kWall, 2.5e-4), "250 us");
  EXPECT_EQ(format_value(Metric::kWall, 5.5e-3), "5.5 ms");
  EXPECT_EQ(format_value(Metric::kSpeedup, 19.94), "19.9x");
}

TEST(CompareOutput, ConsoleShowsEveryCaseTheNotesAndTheSummary) {
  const Comparison c = slower();
  const std::string text = shown<ConsoleComparisonReporter>(c, FailOn::kSlower, 1);
  EXPECT_NE(text.find("unpaired: ratio of the medians"), std::string::npos) << text;
  EXPECT_NE(text.find("+10.0 %"), std::string::npos) << text;
  EXPECT_NE(text.find("SLOWER"), std::string::npos);
  EXPECT_NE(text.find("not compared:\n  baseline: streampetr hot d2d engine"), std::string::npos)
      << text;
  EXPECT_NE(text.find("4 SLOWER, 0 FASTER, 0 UNSURE, 2 SAME; 4 unmatched; could see \u00b12.1 % "
                      "(the widest interval's half-width); fail on slower: exit 1"),
            std::string::npos)
      << text;
}

TEST(CompareOutput, MarkdownTableWithFlaggedVerdictsInBold) {
  const std::string md = shown<MarkdownComparisonReporter>(slower(), FailOn::kSlower, 1);
  EXPECT_NE(md.find("| config | pattern | direction |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **SLOWER** |"), std::string::npos) << md;
  EXPECT_NE(md.find("| SAME |"), std::string::npos) << md;
}

TEST(CompareOutput, JsonCarriesEachCaseWithItsInterval) {
  const nlohmann::json j = comparison_json(slower(), FailOn::kSlower, 1);
  EXPECT_EQ(j["compare_version"], kCompareJsonVersion);
  EXPECT_EQ(j["method"], "unpaired");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["counts"]["SLOWER"], 4);
  EXPECT_EQ(j["unmatched"].size(), 4u);
  const auto& first = j["cases"][0];
  EXPECT_EQ(first["metric"], "wall");
  EXPECT_EQ(first["verdict"], "SAME");
  EXPECT_TRUE(first["low"].is_number());
  EXPECT_DOUBLE_EQ(first["threshold"].get<double>(), 0.05);
  const nlohmann::json one = comparison_json(
      compare_reports(read_reports(data("same.json")), read_reports(data("one-round.json")), {}),
      FailOn::kSlower, 0);
  EXPECT_TRUE(one["cases"][0]["high"].is_null());  // unbounded, never Infinity
  EXPECT_EQ(one["cases"][0]["low"], 0.0);
}

TEST(CompareOutput, EveryOutputThroughOneMultiplex) {
  const Comparison c = slower();
  std::ostringstream console, markdown, json;
  MultiplexComparisonReporter outputs;
  outputs.add(std::make_unique<ConsoleComparisonReporter>(console));
  outputs.add(std::make_unique<MarkdownComparisonReporter>(markdown));
  outputs.add(std::make_unique<JsonComparisonReporter>(json));
  outputs.begin(c);
  std::string notes;
  for (const std::string& note : c.notes) notes += note + "\n";
  EXPECT_EQ(console.str(), notes);  // the notes come first, before any case
  EXPECT_TRUE(markdown.str().empty());
  for (const CaseResult& r : c.cases) outputs.run(r);
  outputs.end(ComparisonOutcome{c, FailOn::kSlower, 1});
  EXPECT_EQ(console.str(), shown<ConsoleComparisonReporter>(c, FailOn::kSlower, 1));
  EXPECT_EQ(markdown.str(), shown<MarkdownComparisonReporter>(c, FailOn::kSlower, 1));
  EXPECT_EQ(nlohmann::json::parse(json.str()), comparison_json(c, FailOn::kSlower, 1));
}

// A report's date written by another tool, with a two-byte character across the tenth byte
// (where `compare` cuts the day): the day keeps whole characters, and every output is written,
// the JSON one valid (a half character once made the JSON writer throw).
TEST(CompareOutput, ANonAsciiDateCutToItsDayStaysValidUtf8) {
  const TempDir dir;
  const std::string candidate = edited(dir, "candidate.json", "slower.json", [](auto& doc) {
    doc["context"]["date"] = "2026-11-2\u00e9 12:00";
  });
  const auto candidates = read_reports(candidate);
  EXPECT_EQ(candidates[0].day, "2026-11-2");
  const Comparison c = compare_reports(read_reports(data("base.json")), candidates, {});
  std::ostringstream out;
  MultiplexComparisonReporter outputs;
  outputs.add(std::make_unique<ConsoleComparisonReporter>(out));
  outputs.add(std::make_unique<MarkdownComparisonReporter>(out));
  std::ostringstream json;
  outputs.add(std::make_unique<JsonComparisonReporter>(json));
  EXPECT_NO_THROW(report_comparison(outputs, c, FailOn::kSlower, 1));
  const nlohmann::json written = nlohmann::json::parse(json.str());
  std::string notes;
  for (const auto& note : written["notes"]) notes += note.get<std::string>() + "\n";
  EXPECT_NE(notes.find("2026-11-2"), std::string::npos) << notes;
}

}  // namespace
}  // namespace mtc::bench::compare
