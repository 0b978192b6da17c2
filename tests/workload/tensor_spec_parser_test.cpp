// The one-member objects of the spec (distributions and layouts): the member's name picks the
// kind and its body is read from the right place. The JSON object lives in the test, so a name
// or body read from a temporary the parser let die shows up under AddressSanitizer as a
// stack-use-after-scope (scripts/sanitize.sh asan), and as wrong values wherever it is reused.
#include "workload/detail/tensor_spec_parser.h"

#include <gtest/gtest.h>

#include "errors.h"

namespace mtc::bench::detail {
namespace {

const JsonChecks kChecks("spec.json");

TEST(TensorSpecParser, CountDistributionsReadTheirOneMember) {
  const Json uniform = Json::parse(R"({"uniform": [3, 7]})");
  const CountDist u = parse_count(kChecks, uniform, "/shape/0");
  EXPECT_EQ(u.kind, CountDist::Kind::kUniform);
  EXPECT_EQ(u.lo, 3);
  EXPECT_EQ(u.hi, 7);

  const Json choice = Json::parse(R"({"choice": [4, 0, 9]})");
  const CountDist c = parse_count(kChecks, choice, "/shape/0");
  EXPECT_EQ(c.kind, CountDist::Kind::kChoice);
  EXPECT_EQ(c.choices, (std::vector<int64_t>{4, 0, 9}));

  const Json poisson = Json::parse(R"({"poisson": {"mean": 2.5, "max": 6}})");
  const CountDist p = parse_count(kChecks, poisson, "/shape/0");
  EXPECT_EQ(p.kind, CountDist::Kind::kPoisson);
  EXPECT_DOUBLE_EQ(p.mean, 2.5);
  EXPECT_EQ(p.hi, 6);
}

TEST(TensorSpecParser, ValueDistributionsReadTheirOneMember) {
  const Json uniform = Json::parse(R"({"uniform": [-2.5, 0.5]})");
  const ValueDist u = parse_values(kChecks, uniform, "/values", c10::ScalarType::Float);
  EXPECT_EQ(u.kind, ValueDist::Kind::kUniform);
  EXPECT_DOUBLE_EQ(u.lo, -2.5);
  EXPECT_DOUBLE_EQ(u.hi, 0.5);

  const Json normal = Json::parse(R"({"normal": {"mean": 1, "std": 0.25, "min": -3, "max": 40}})");
  const ValueDist n = parse_values(kChecks, normal, "/values", c10::ScalarType::Int);
  EXPECT_EQ(n.kind, ValueDist::Kind::kNormal);
  EXPECT_DOUBLE_EQ(n.mean, 1.0);
  EXPECT_DOUBLE_EQ(n.stddev, 0.25);
  EXPECT_EQ(n.int_lo, -3);
  EXPECT_EQ(n.int_hi, 40);

  const Json arange = Json::parse(R"({"arange": {"start": 5, "step": -2}})");
  const ValueDist a = parse_values(kChecks, arange, "/values", c10::ScalarType::Long);
  EXPECT_EQ(a.kind, ValueDist::Kind::kArange);
  EXPECT_EQ(a.int_start, 5);
  EXPECT_EQ(a.int_step, -2);
}

TEST(TensorSpecParser, LayoutsReadTheirOneMember) {
  const Json transpose = Json::parse(R"({"transpose": [0, -1]})");
  const Layout t = parse_layout(kChecks, transpose, "/layout", 3);
  EXPECT_EQ(t.kind, Layout::Kind::kTranspose);
  EXPECT_EQ(t.dim0, 0);
  EXPECT_EQ(t.dim1, 2);

  const Json slice = Json::parse(R"({"slice": {"dim": 1, "step": 3}})");
  const Layout s = parse_layout(kChecks, slice, "/layout", 2);
  EXPECT_EQ(s.kind, Layout::Kind::kSlice);
  EXPECT_EQ(s.dim0, 1);
  EXPECT_EQ(s.step, 3);
}

TEST(TensorSpecParser, ErrorsNameTheMemberPath) {
  const Json bad = Json::parse(R"({"uniform": [1, "x"]})");
  try {
    (void)parse_values(kChecks, bad, "/values", c10::ScalarType::Int);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/values/uniform/1");
  }
  const Json two = Json::parse(R"({"uniform": [1, 2], "choice": [1]})");
  EXPECT_THROW((void)parse_count(kChecks, two, "/shape/0"), ConfigError);
}

}  // namespace
}  // namespace mtc::bench::detail
