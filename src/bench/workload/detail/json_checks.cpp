#include "workload/detail/json_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "errors.h"
#include "shown.h"

namespace mtc::bench::detail {

std::string child_path(const std::string& parent, const std::string& key) {
  std::string out = parent + "/";
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string child_path(const std::string& parent, size_t index) {
  return parent + "/" + std::to_string(index);
}

std::string type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

std::string brief(const Json& value) {
  return shown(value.dump(-1, ' ', false, Json::error_handler_t::replace));
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_name(const std::string& given, const std::vector<std::string>& candidates) {
  // Typos of short names are ambiguous; a third of the length, at least 1, at most 3 edits.
  // The distance is at least the difference in length, and costs the product of the lengths:
  // names of another length, and names too long to be typed by hand, are not compared.
  constexpr size_t kLongestCompared = 64;
  if (given.size() > kLongestCompared) return "";
  const size_t limit = std::clamp<size_t>(given.size() / 3, 1, 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    const size_t length_difference = candidate.size() > given.size()
                                         ? candidate.size() - given.size()
                                         : given.size() - candidate.size();
    if (length_difference > limit) continue;
    const size_t d = edit_distance(given, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

void JsonChecks::fail(const std::string& path, const std::string& message) const {
  throw ConfigError(file_, path, message);
}

void JsonChecks::expect_object(const Json& value, const std::string& path) const {
  if (!value.is_object()) fail(path, fmt::format("expected an object, got {}", type_name(value)));
}

void JsonChecks::expect_array(const Json& value, const std::string& path) const {
  if (!value.is_array()) fail(path, fmt::format("expected an array, got {}", type_name(value)));
}

void JsonChecks::allow_keys(const Json& object, const std::string& path,
                            const std::vector<std::string>& allowed) const {
  for (const auto& [key, unused] : object.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    const std::string guess = closest_name(key, allowed);
    fail(child_path(path, key),
         fmt::format("unknown key '{}'{}; allowed here: {}", shown(key),
                     guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", guess),
                     join(allowed)));
  }
}

void JsonChecks::require_key(const Json& object, const std::string& path,
                             const std::string& key) const {
  if (!object.contains(key)) fail(path, fmt::format("missing required key '{}'", key));
}

std::pair<std::string, const Json*> JsonChecks::single_member(const Json& object,
                                                              const std::string& path,
                                                              const std::vector<std::string>& kinds,
                                                              const std::string& what) const {
  if (object.size() != 1) {
    fail(path, fmt::format("{} object has exactly one key, one of: {}; got {}", what, join(kinds),
                           brief(object)));
  }
  allow_keys(object, path, kinds);
  // Through an iterator of `object` itself: the name is copied and the body points into
  // `object`. (Not `*object.items().begin()`: that is a reference into a temporary iterator,
  // which dies at the end of the statement.)
  const auto member = object.begin();
  return {member.key(), &member.value()};
}

std::string JsonChecks::get_string(const Json& value, const std::string& path) const {
  if (!value.is_string()) fail(path, fmt::format("expected a string, got {}", type_name(value)));
  return value.get<std::string>();
}

bool JsonChecks::get_bool(const Json& value, const std::string& path) const {
  if (!value.is_boolean()) {
    fail(path, fmt::format("expected true or false, got {} ({})", type_name(value), brief(value)));
  }
  return value.get<bool>();
}

int64_t JsonChecks::get_int(const Json& value, const std::string& path, int64_t lo,
                            int64_t hi) const {
  int64_t result = 0;
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi))
      fail(path, fmt::format("{} is out of range [{}, {}]", u, lo, hi));
    result = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    result = value.get<int64_t>();
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    // 2^63 is the first double above every int64.
    if (std::floor(d) != d || !(d >= -0x1p63 && d < 0x1p63)) {
      fail(path, fmt::format("expected an integer, got {}", brief(value)));
    }
    result = static_cast<int64_t>(d);
  } else {
    fail(path, fmt::format("expected an integer, got {} ({})", type_name(value), brief(value)));
  }
  if (result < lo || result > hi) {
    if (lo == 0 && result < 0) fail(path, fmt::format("must be >= 0, got {}", result));
    fail(path, fmt::format("{} is out of range [{}, {}]", result, lo, hi));
  }
  return result;
}

uint64_t JsonChecks::get_uint64(const Json& value, const std::string& path) const {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  return static_cast<uint64_t>(get_int(value, path, 0));
}

double JsonChecks::get_number(const Json& value, const std::string& path, double lo,
                              double hi) const {
  if (!value.is_number()) {
    fail(path, fmt::format("expected a number, got {} ({})", type_name(value), brief(value)));
  }
  const double d = value.get<double>();
  if (!std::isfinite(d)) fail(path, "expected a finite number");
  if (d < lo || d > hi) {
    if (lo == 0 && d < 0) fail(path, fmt::format("must be >= 0, got {}", d));
    fail(path, fmt::format("{} is out of range [{}, {}]", d, lo, hi));
  }
  return d;
}

}  // namespace mtc::bench::detail
