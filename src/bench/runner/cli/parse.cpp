#include "runner/cli/parse.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <set>
#include <stdexcept>

#include "errors.h"
#include "runner/env/host_state.h"
#include "runner/strategies/catalog.h"
#include "shown.h"

namespace mtc::bench {
namespace {

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> parts;
  for (const std::string& item : items) {
    size_t start = 0;
    while (start <= item.size()) {
      const size_t comma = std::min(item.find(',', start), item.size());
      parts.push_back(trim(std::string_view(item).substr(start, comma - start)));
      start = comma + 1;
    }
  }
  return parts;
}

Assignment parse_assignment(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    throw UsageError(fmt::format("--set {}: expected NAME=VALUE", shown(text)));
  }
  Assignment a{trim(text.substr(0, eq)), trim(text.substr(eq + 1))};
  if (a.name.empty()) throw UsageError(fmt::format("--set {}: empty NAME", shown(text)));
  return a;
}

namespace {

// "1,[2,3],{\"a\": 4},\"x,y\"" -> 1 | [2,3] | {"a": 4} | "x,y": split at the commas outside
// JSON's brackets, braces and strings, so that a value of a list can be swept (--sweep
// '/directions=["h2h"],["h2d","h2h"]' was cut inside the second list).
std::vector<std::string> split_json_values(std::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  bool in_string = false;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size()) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\')
          ++i;  // the escaped character cannot end the string
        else if (c == '"')
          in_string = false;
        continue;
      }
      if (c == '"') in_string = true;
      if (c == '[' || c == '{') ++depth;
      if ((c == ']' || c == '}') && depth > 0) --depth;
      if (c != ',' || depth > 0) continue;
    }
    parts.push_back(trim(text.substr(start, i - start)));
    start = i + 1;
  }
  return parts;
}

}  // namespace

SweepAxis parse_sweep(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    throw UsageError(fmt::format("--sweep {}: expected NAME=V1,V2,...", shown(text)));
  }
  SweepAxis axis{trim(text.substr(0, eq)), split_json_values(text.substr(eq + 1))};
  if (axis.name.empty()) throw UsageError(fmt::format("--sweep {}: empty NAME", shown(text)));
  for (const std::string& v : axis.values) {
    if (v.empty()) throw UsageError(fmt::format("--sweep {}: empty value", shown(text)));
  }
  return axis;
}

std::vector<std::vector<std::string>> expand_sweeps(const std::vector<SweepAxis>& axes) {
  std::set<std::string> names;
  for (const SweepAxis& axis : axes) {
    if (!names.insert(axis.name).second) {
      throw UsageError(fmt::format("--sweep: '{}' is swept twice", shown(axis.name)));
    }
  }
  std::vector<std::vector<std::string>> points{{}};
  for (const SweepAxis& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& point : points) {
      for (const std::string& value : axis.values) {
        auto extended = point;
        extended.push_back(axis.name + "=" + value);
        next.push_back(std::move(extended));
      }
    }
    points = std::move(next);
  }
  return points;
}

std::vector<Direction> parse_directions(const std::vector<std::string>& items) {
  std::vector<Direction> directions;
  for (const std::string& item : split_list(items)) {
    if (item == "all") {
      for (Direction d : all_directions()) {
        if (std::find(directions.begin(), directions.end(), d) == directions.end())
          directions.push_back(d);
      }
      continue;
    }
    const auto d = parse_direction(item);
    if (!d) {
      throw UsageError(
          fmt::format("--direction {}: expected h2d, d2h, d2d, h2h or all", shown(item)));
    }
    if (std::find(directions.begin(), directions.end(), *d) == directions.end())
      directions.push_back(*d);
  }
  if (directions.empty()) throw UsageError("--direction: no direction given");
  return directions;
}

std::vector<int> parse_devices(const std::vector<std::string>& items) {
  std::vector<int> devices;
  for (const std::string& item : split_list(items)) {
    int index = -1;
    if (!parse_number(item, index) || index < 0) {
      throw UsageError(fmt::format("--devices {}: expected GPU indices such as 0,1", shown(item)));
    }
    if (std::find(devices.begin(), devices.end(), index) != devices.end()) {
      throw UsageError(fmt::format("--devices: GPU {} given twice", index));
    }
    devices.push_back(index);
  }
  if (devices.empty()) throw UsageError("--devices: no device given");
  return devices;
}

int64_t parse_bytes(std::string_view text) {
  const std::string t = trim(text);
  size_t digits = 0;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits]))) ++digits;
  int64_t number = 0;
  if (digits == 0 || !parse_number(std::string_view(t).substr(0, digits), number)) {
    throw UsageError(
        fmt::format("{}: expected a byte count such as 4096, 64KiB or 32MiB", shown(text)));
  }
  const std::string unit = trim(std::string_view(t).substr(digits));
  if (unit.starts_with('.') || unit.starts_with(',')) {
    throw UsageError(fmt::format(
        "{}: expected a whole number of bytes or units (1536KiB, not 1.5MiB)", shown(text)));
  }
  static const std::vector<std::pair<std::string, int64_t>> units{
      {"", 1},      {"B", 1},        {"KiB", 1LL << 10}, {"MiB", 1LL << 20}, {"GiB", 1LL << 30},
      {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000}};
  for (const auto& [name, scale] : units) {
    if (unit == name) {
      if (number <= 0 || number > INT64_MAX / scale) {
        throw UsageError(fmt::format("{}: byte count out of range", shown(text)));
      }
      return number * scale;
    }
  }
  throw UsageError(fmt::format("{}: unknown unit '{}' (B, KiB, MiB, GiB, KB, MB, GB)", shown(text),
                               shown(unit)));
}

std::string bytes_text(int64_t bytes) {
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"GiB", 1LL << 30}, {"MiB", 1LL << 20}, {"KiB", 1LL << 10}};
  for (const auto& [unit, scale] : kUnits) {
    if (bytes >= scale && bytes % scale == 0) return fmt::format("{}{}", bytes / scale, unit);
  }
  return std::to_string(bytes);
}

double parse_fraction(std::string_view text) {
  std::string t = trim(text);
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t = trim(std::string_view(t).substr(0, t.size() - 1));
  double value = 0.0;
  try {
    size_t used = 0;
    value = std::stod(t, &used);
    if (used != t.size()) throw std::invalid_argument(t);
  } catch (const std::exception&) {
    throw UsageError(fmt::format("{}: expected a fraction such as 0.005 or 0.5%", shown(text)));
  }
  return percent ? value / 100.0 : value;
}

namespace {

// The message quotes `written` where given: the value as the user wrote it (200%, not 2).
template <typename T>
T within(std::string_view option, T value, const SettingBounds<T>& bounds,
         std::string_view written = {}) {
  if (bounds.contains(value)) return value;
  const std::string given = written.empty() ? fmt::format("{}", value) : shown(written);
  throw UsageError(bounds.above_min ? fmt::format("{} {}: must be above {} and at most {}", option,
                                                  given, bounds.min, bounds.max)
                                    : fmt::format("{} {}: must be from {} to {}", option, given,
                                                  bounds.min, bounds.max));
}

}  // namespace

int64_t checked_within(std::string_view option, int64_t value,
                       const SettingBounds<int64_t>& bounds) {
  return within(option, value, bounds);
}

double checked_within(std::string_view option, double value, const SettingBounds<double>& bounds,
                      std::string_view written) {
  return within(option, value, bounds, written);
}

namespace {

// The bounds' sentence, for a value that is out of them or no number at all.
template <typename T>
std::string bounds_text(const SettingBounds<T>& bounds) {
  return bounds.above_min ? fmt::format("above {} and at most {}", bounds.min, bounds.max)
                          : fmt::format("from {} to {}", bounds.min, bounds.max);
}

template <typename T>
T parsed_within(std::string_view option, std::string_view text, const SettingBounds<T>& bounds,
                const char* kind) {
  std::string t = trim(text);
  // A plus as CLI11 took it, but not before a sign: "+-3" is no number.
  if (t.starts_with('+') && !t.starts_with("+-")) t.erase(0, 1);
  T value{};
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec == std::errc::result_out_of_range && ptr == t.data() + t.size())
    throw UsageError(fmt::format("{} {}: must be {}", option, shown(text), bounds_text(bounds)));
  if (ec != std::errc() || ptr != t.data() + t.size() || t.empty())
    throw UsageError(
        fmt::format("{} {}: expected {} {}", option, shown(text), kind, bounds_text(bounds)));
  return within(option, value, bounds);
}

}  // namespace

int64_t parse_within(std::string_view option, std::string_view text,
                     const SettingBounds<int64_t>& bounds) {
  return parsed_within(option, text, bounds, "a whole number");
}

double parse_within(std::string_view option, std::string_view text,
                    const SettingBounds<double>& bounds) {
  return parsed_within(option, text, bounds, "a number");
}

bool parse_on_off(std::string_view option, std::string_view text) {
  std::string t = trim(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  // The words CLI11 took for a bool, which these options were read as before.
  for (const char* on : {"on", "true", "yes", "1", "enable"}) {
    if (t == on) return true;
  }
  for (const char* off : {"off", "false", "no", "0", "disable"}) {
    if (t == off) return false;
  }
  throw UsageError(fmt::format("{} {}: expected on or off", option, shown(text)));
}

uint64_t parse_seed(std::string_view text) {
  uint64_t seed = 0;
  // from_chars takes no sign and fails past 2^64 - 1: "-1" and 2^64 are refused, not wrapped.
  if (!parse_number(trim(text), seed)) {
    throw UsageError(
        fmt::format("--seed {}: expected a whole number from 0 to {}", shown(text), UINT64_MAX));
  }
  return seed;
}

std::vector<Pattern> parse_patterns(const std::vector<std::string>& items) {
  std::vector<Pattern> patterns;
  for (const std::string& item : split_list(items)) {
    const auto p = parse_pattern(item);
    if (!p)
      throw UsageError(fmt::format(
          "--pattern {}: expected hot, step or step-busy (a list: hot,step)", shown(item)));
    if (std::find(patterns.begin(), patterns.end(), *p) == patterns.end()) patterns.push_back(*p);
  }
  if (patterns.empty()) throw UsageError("--pattern: no pattern given");
  return patterns;
}

std::string parse_gap_mode_choice(const std::string& text) {
  if (text == "sleep" || text == "busy" || text == "both") return text;
  throw UsageError(fmt::format("--gap-mode {}: expected sleep, busy or both", shown(text)));
}

AbLabel parse_ab_label(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return UsageError(fmt::format(
        "--ab-label {}: {} (expected JOB:SIDE:ROUND, e.g. pr-7:baseline:0)", shown(text), why));
  };
  const size_t first = text.find(':');
  const size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
  if (second == std::string_view::npos) throw bad("needs three parts separated by ':'");
  AbLabel label{std::string(text.substr(0, first)),
                std::string(text.substr(first + 1, second - first - 1)), 0};
  const std::string_view round = text.substr(second + 1);
  if (label.job.empty() || label.side.empty()) throw bad("JOB and SIDE must not be empty");
  if (round.empty() || round.size() > 9 ||
      round.find_first_not_of("0123456789") != std::string_view::npos) {
    throw bad("ROUND must be a non-negative integer");
  }
  label.round = std::stoll(std::string(round));
  return label;
}

std::map<std::string, std::string> parse_engine_libraries(const std::vector<std::string>& items) {
  std::map<std::string, std::string> libraries;
  // An item holds a path, so it is shown as paths are (shown_path).
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    const std::string label = item.substr(0, eq);
    if (eq == std::string::npos || eq + 1 == item.size()) {
      throw UsageError(fmt::format("--engine-lib {}: expected LABEL=PATH", shown_path(item)));
    }
    if (!split_loaded_variant("engine@" + label)) {
      throw UsageError(fmt::format("--engine-lib {}: the label must be letters, digits, _ or -",
                                   shown_path(item)));
    }
    if (!libraries.emplace(label, item.substr(eq + 1)).second) {
      throw UsageError(fmt::format("--engine-lib {}: the label {} is given twice", shown_path(item),
                                   shown(label)));
    }
  }
  return libraries;
}

std::vector<int> parse_cpu_list(std::string_view text) {
  const auto cpus = cpu_list_from_text(text);
  if (!cpus)
    throw UsageError(
        fmt::format("CPU list {}: expected numbers and ranges such as 0-7,16", shown(text)));
  return *cpus;
}

std::vector<std::string> parse_strategies(const std::vector<std::string>& items) {
  std::vector<std::string> names;
  for (const std::string& item : split_list(items)) {
    if (item.empty()) continue;
    if (find_strategy(item) == nullptr) {
      throw UsageError(fmt::format(
          "--strategy {}: unknown strategy (known: {}; and an engine variant with a build "
          "loaded by --engine-lib, as engine@LABEL)",
          shown(item), fmt::join(strategy_names(), ", ")));
    }
    if (std::find(names.begin(), names.end(), item) == names.end()) names.push_back(item);
  }
  if (names.empty()) throw UsageError("--strategy: no strategy given");
  return names;
}

}  // namespace mtc::bench
