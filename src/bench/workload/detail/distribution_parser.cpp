#include "workload/detail/distribution_parser.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <utility>

#include "shown.h"

namespace mtc::bench::detail {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr double kMaxPoissonMean = 1e15;

std::pair<int64_t, int64_t> parse_pair(const JsonChecks& checks, const Json& value,
                                       const std::string& path, int64_t lo, int64_t hi) {
  if (!value.is_array() || value.size() != 2) {
    checks.fail(path, fmt::format("expected [lo, hi], got {}", brief(value)));
  }
  const int64_t a = checks.get_int(value[0], child_path(path, size_t{0}), lo, hi);
  const int64_t b = checks.get_int(value[1], child_path(path, size_t{1}), lo, hi);
  if (a > b) checks.fail(path, fmt::format("empty range: lo {} > hi {}", a, b));
  return {a, b};
}

std::pair<double, double> parse_real_pair(const JsonChecks& checks, const Json& value,
                                          const std::string& path) {
  if (!value.is_array() || value.size() != 2) {
    checks.fail(path, fmt::format("expected [lo, hi], got {}", brief(value)));
  }
  const double a = checks.get_number(value[0], child_path(path, size_t{0}));
  const double b = checks.get_number(value[1], child_path(path, size_t{1}));
  if (a > b) checks.fail(path, fmt::format("empty range: lo {} > hi {}", a, b));
  if (!std::isfinite(b - a)) checks.fail(path, "range too wide: hi - lo overflows");
  return {a, b};
}

// min/max members shared by the normal and Poisson forms; `lo`..`hi` is what the context allows.
void parse_clamp(const JsonChecks& checks, const Json& body, const std::string& path, int64_t lo,
                 int64_t hi, int64_t& min_out, int64_t& max_out) {
  min_out =
      body.contains("min") ? checks.get_int(body["min"], child_path(path, "min"), lo, hi) : lo;
  max_out =
      body.contains("max") ? checks.get_int(body["max"], child_path(path, "max"), lo, hi) : hi;
  if (min_out > max_out) {
    checks.fail(path, fmt::format("empty range: min {} > max {}", min_out, max_out));
  }
}

// The {"mean", "std", "min", "max"} object of a clamped normal; min/max are read by the caller,
// whose bounds depend on what is drawn.
void parse_normal(const JsonChecks& checks, const Json& body, const std::string& path, double& mean,
                  double& stddev) {
  checks.expect_object(body, path);
  checks.allow_keys(body, path, {"mean", "std", "min", "max"});
  checks.require_key(body, path, "mean");
  checks.require_key(body, path, "std");
  mean = checks.get_number(body["mean"], child_path(path, "mean"));
  stddev = checks.get_number(body["std"], child_path(path, "std"), 0.0);
}

int64_t integral_value(const JsonChecks& checks, const Json& value, const std::string& path,
                       c10::ScalarType dtype) {
  if (dtype == c10::ScalarType::Bool && value.is_boolean()) return value.get<bool>() ? 1 : 0;
  const auto [lo, hi] = integral_range(dtype);
  return checks.get_int(value, path, lo, hi);
}

}  // namespace

std::pair<int64_t, int64_t> integral_range(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Bool:
      return {0, 1};
    case c10::ScalarType::Byte:
      return {0, 255};
    case c10::ScalarType::Char:
      return {-128, 127};
    case c10::ScalarType::Short:
      return {-32768, 32767};
    case c10::ScalarType::Int:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      return {std::numeric_limits<int64_t>::min(), kInt64Max};
  }
}

bool is_symbol_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name[0])) return false;
  for (char c : name) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

CountDist parse_count(const JsonChecks& checks, const Json& value, const std::string& path) {
  CountDist dist;
  dist.path = path;
  if (value.is_number()) {
    dist.kind = CountDist::Kind::kFixed;
    dist.lo = checks.get_int(value, path, 0);
    return dist;
  }
  if (value.is_string()) {
    dist.kind = CountDist::Kind::kSymbol;
    dist.symbol = value.get<std::string>();
    if (!is_symbol_name(dist.symbol)) {
      checks.fail(path, fmt::format("'{}' is not a symbol name ([A-Za-z_][A-Za-z0-9_]*)",
                                    shown(dist.symbol)));
    }
    return dist;
  }
  if (!value.is_object()) {
    checks.fail(path, fmt::format("expected a count (an integer >= 0, a symbol name or a "
                                  "distribution object), got {} ({})",
                                  type_name(value), brief(value)));
  }
  const auto [kind, body_ptr] = checks.single_member(
      value, path, {"fixed", "uniform", "choice", "normal", "poisson"}, "a distribution");
  const Json& body = *body_ptr;
  const std::string body_path = child_path(path, kind);
  if (kind == "fixed") {
    dist.kind = CountDist::Kind::kFixed;
    dist.lo = checks.get_int(body, body_path, 0);
  } else if (kind == "uniform") {
    dist.kind = CountDist::Kind::kUniform;
    std::tie(dist.lo, dist.hi) = parse_pair(checks, body, body_path, 0, kInt64Max);
  } else if (kind == "choice") {
    dist.kind = CountDist::Kind::kChoice;
    checks.expect_array(body, body_path);
    if (body.empty()) checks.fail(body_path, "the choice list is empty");
    for (size_t i = 0; i < body.size(); ++i) {
      dist.choices.push_back(checks.get_int(body[i], child_path(body_path, i), 0));
    }
  } else if (kind == "normal") {
    dist.kind = CountDist::Kind::kNormal;
    parse_normal(checks, body, body_path, dist.mean, dist.stddev);
    parse_clamp(checks, body, body_path, 0, kInt64Max, dist.lo, dist.hi);
  } else {
    dist.kind = CountDist::Kind::kPoisson;
    checks.expect_object(body, body_path);
    checks.allow_keys(body, body_path, {"mean", "min", "max"});
    checks.require_key(body, body_path, "mean");
    dist.mean =
        checks.get_number(body["mean"], child_path(body_path, "mean"), 0.0, kMaxPoissonMean);
    parse_clamp(checks, body, body_path, 0, kInt64Max, dist.lo, dist.hi);
  }
  return dist;
}

ValueDist default_values(c10::ScalarType dtype) {
  ValueDist dist;
  dist.integral = c10::isIntegralType(dtype, /*includeBool=*/true);
  if (dtype == c10::ScalarType::Bool) {
    dist.kind = ValueDist::Kind::kBernoulli;
    dist.mean = 0.5;
  } else if (dist.integral) {
    dist.kind = ValueDist::Kind::kUniform;
    dist.int_lo = 0;
    dist.int_hi = std::min<int64_t>(100, integral_range(dtype).second);
  } else {
    dist.kind = ValueDist::Kind::kUniform;
    dist.lo = 0.0;
    dist.hi = 1.0;
  }
  return dist;
}

ValueDist parse_values(const JsonChecks& checks, const Json& value, const std::string& path,
                       c10::ScalarType dtype) {
  checks.expect_object(value, path);
  const auto [kind, body_ptr] = checks.single_member(
      value, path, {"constant", "uniform", "normal", "choice", "bernoulli", "poisson", "arange"},
      "a value distribution");
  const Json& body = *body_ptr;
  const std::string body_path = child_path(path, kind);
  ValueDist dist;
  dist.integral = c10::isIntegralType(dtype, /*includeBool=*/true);
  const auto [type_lo, type_hi] = integral_range(dtype);
  if (kind == "constant") {
    dist.kind = ValueDist::Kind::kConstant;
    if (dist.integral) {
      dist.int_lo = integral_value(checks, body, body_path, dtype);
    } else {
      dist.lo = checks.get_number(body, body_path);
    }
  } else if (kind == "uniform") {
    dist.kind = ValueDist::Kind::kUniform;
    if (dist.integral) {
      std::tie(dist.int_lo, dist.int_hi) = parse_pair(checks, body, body_path, type_lo, type_hi);
    } else {
      std::tie(dist.lo, dist.hi) = parse_real_pair(checks, body, body_path);
    }
  } else if (kind == "normal") {
    dist.kind = ValueDist::Kind::kNormal;
    parse_normal(checks, body, body_path, dist.mean, dist.stddev);
    if (dist.integral) {
      parse_clamp(checks, body, body_path, type_lo, type_hi, dist.int_lo, dist.int_hi);
    } else {
      dist.lo = body.contains("min") ? checks.get_number(body["min"], child_path(body_path, "min"))
                                     : -std::numeric_limits<double>::infinity();
      dist.hi = body.contains("max") ? checks.get_number(body["max"], child_path(body_path, "max"))
                                     : std::numeric_limits<double>::infinity();
      if (dist.lo > dist.hi) {
        checks.fail(body_path, fmt::format("empty range: min {} > max {}", dist.lo, dist.hi));
      }
    }
  } else if (kind == "choice") {
    dist.kind = ValueDist::Kind::kChoice;
    checks.expect_array(body, body_path);
    if (body.empty()) checks.fail(body_path, "the choice list is empty");
    for (size_t i = 0; i < body.size(); ++i) {
      const std::string item_path = child_path(body_path, i);
      if (dist.integral) {
        dist.int_choices.push_back(integral_value(checks, body[i], item_path, dtype));
      } else {
        dist.choices.push_back(checks.get_number(body[i], item_path));
      }
    }
  } else if (kind == "bernoulli") {
    dist.kind = ValueDist::Kind::kBernoulli;
    dist.mean = checks.get_number(body, body_path, 0.0, 1.0);
  } else if (kind == "poisson") {
    dist.kind = ValueDist::Kind::kPoisson;
    checks.expect_object(body, body_path);
    checks.allow_keys(body, body_path, {"mean"});
    checks.require_key(body, body_path, "mean");
    dist.mean =
        checks.get_number(body["mean"], child_path(body_path, "mean"), 0.0, kMaxPoissonMean);
    dist.int_lo = 0;
    dist.int_hi = type_hi;
  } else {
    dist.kind = ValueDist::Kind::kArange;
    checks.expect_object(body, body_path);
    checks.allow_keys(body, body_path, {"start", "step"});
    const std::string start_path = child_path(body_path, "start");
    const std::string step_path = child_path(body_path, "step");
    if (dist.integral) {
      dist.int_start = body.contains("start") ? checks.get_int(body["start"], start_path) : 0;
      dist.int_step = body.contains("step") ? checks.get_int(body["step"], step_path) : 1;
    } else {
      dist.start = body.contains("start") ? checks.get_number(body["start"], start_path) : 0.0;
      dist.step = body.contains("step") ? checks.get_number(body["step"], step_path) : 1.0;
    }
  }
  return dist;
}

}  // namespace mtc::bench::detail
