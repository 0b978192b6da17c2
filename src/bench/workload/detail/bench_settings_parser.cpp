#include "workload/detail/bench_settings_parser.h"

#include <fmt/format.h>

#include <algorithm>

#include "shown.h"

namespace mtc::bench::detail {
namespace {

// A setting within its bounds (bench_settings.h), as the parser's error at `path` says.
int64_t get_within(const JsonChecks& checks, const Json& value, const std::string& path,
                   const SettingBounds<int64_t>& bounds) {
  return checks.get_int(value, path, bounds.min, bounds.max);
}

double get_within(const JsonChecks& checks, const Json& value, const std::string& path,
                  const SettingBounds<double>& bounds) {
  const double number = checks.get_number(value, path, bounds.min, bounds.max);
  if (!bounds.contains(number)) checks.fail(path, fmt::format("must be > {}", bounds.min));
  return number;
}

template <typename T>
void reject_duplicates(const JsonChecks& checks, const std::vector<T>& items,
                       const std::string& path) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (std::find(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(i), items[i]) !=
        items.begin() + static_cast<std::ptrdiff_t>(i)) {
      checks.fail(child_path(path, i),
                  fmt::format("duplicate entry {}", shown(fmt::format("{}", items[i]))));
    }
  }
}

// The rounds and the training-step pattern (see the runner's measure/stopping.h and types.h).
void parse_round_settings(const JsonChecks& checks, const Json& value, const std::string& path,
                          BenchSettings& settings) {
  auto at = [&](const char* key) { return child_path(path, key); };
  if (value.contains("patterns")) {
    const Json& list = value["patterns"];
    checks.expect_array(list, at("patterns"));
    if (list.empty()) checks.fail(at("patterns"), "must name at least one pattern (hot, step)");
    settings.patterns.clear();
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item_path = child_path(at("patterns"), i);
      settings.patterns.push_back(checks.get_string(list[i], item_path));
      if (settings.patterns.back() != "hot" && settings.patterns.back() != "step" &&
          settings.patterns.back() != "step-busy") {
        checks.fail(item_path, fmt::format("unknown pattern {} (known: hot, step, step-busy)",
                                           shown(settings.patterns.back())));
      }
    }
    reject_duplicates(checks, settings.patterns, at("patterns"));
  }
  if (value.contains("inputs")) {
    settings.inputs =
        static_cast<int>(get_within(checks, value["inputs"], at("inputs"), kInputsBounds));
  }
  if (value.contains("gap_us")) {
    settings.gap_us = get_within(checks, value["gap_us"], at("gap_us"), kGapUsBounds);
  }
  if (value.contains("gap_mode")) {
    settings.gap_mode = checks.get_string(value["gap_mode"], at("gap_mode"));
    if (settings.gap_mode != "sleep" && settings.gap_mode != "busy" &&
        settings.gap_mode != "both") {
      checks.fail(at("gap_mode"), fmt::format("unknown gap mode {} (known: sleep, busy, both)",
                                              shown(settings.gap_mode)));
    }
  }
  if (value.contains("gap_touch_bytes")) {
    settings.gap_touch_bytes =
        get_within(checks, value["gap_touch_bytes"], at("gap_touch_bytes"), kGapTouchBytesBounds);
  }
  if (value.contains("min_rounds")) {
    settings.min_rounds =
        static_cast<int>(get_within(checks, value["min_rounds"], at("min_rounds"), kRoundsBounds));
  }
  if (value.contains("max_rounds")) {
    settings.max_rounds =
        static_cast<int>(get_within(checks, value["max_rounds"], at("max_rounds"), kRoundsBounds));
  }
  if (const std::string error = round_limits_error(settings.min_rounds, settings.max_rounds);
      !error.empty()) {
    checks.fail(at(value.contains("max_rounds") ? "max_rounds" : "min_rounds"), error);
  }
  if (value.contains("processes")) {
    settings.processes =
        static_cast<int>(get_within(checks, value["processes"], at("processes"), kProcessesBounds));
  }
  if (value.contains("round_time_s")) {
    settings.round_time_s =
        get_within(checks, value["round_time_s"], at("round_time_s"), kRoundTimeBounds);
  }
}

}  // namespace

BenchSettings parse_bench_settings(const JsonChecks& checks, const Json& value,
                                   const std::string& path) {
  checks.expect_object(value, path);
  checks.allow_keys(
      value, path,
      {"warmup", "min_samples", "min_time_s", "noise_target", "timeout_s", "strategies", "devices",
       "overlap_us", "raw_samples", "patterns", "inputs", "gap_us", "gap_mode", "gap_touch_bytes",
       "min_rounds", "max_rounds", "round_time_s", "processes"});
  BenchSettings settings;
  auto at = [&](const char* key) { return child_path(path, key); };
  if (value.contains("warmup")) {
    settings.warmup =
        static_cast<int>(get_within(checks, value["warmup"], at("warmup"), kWarmupBounds));
  }
  if (value.contains("min_samples")) {
    settings.min_samples = static_cast<int>(
        get_within(checks, value["min_samples"], at("min_samples"), kMinSamplesBounds));
  }
  if (value.contains("min_time_s")) {
    settings.min_time_s = get_within(checks, value["min_time_s"], at("min_time_s"), kMinTimeBounds);
  }
  if (value.contains("noise_target")) {
    settings.noise_target =
        get_within(checks, value["noise_target"], at("noise_target"), kNoiseTargetBounds);
  }
  if (value.contains("timeout_s")) {
    settings.timeout_s = get_within(checks, value["timeout_s"], at("timeout_s"), kTimeoutBounds);
  }
  if (value.contains("strategies")) {
    const Json& list = value["strategies"];
    checks.expect_array(list, at("strategies"));
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item_path = child_path(at("strategies"), i);
      settings.strategies.push_back(checks.get_string(list[i], item_path));
      if (settings.strategies.back().empty()) checks.fail(item_path, "empty strategy name");
    }
    reject_duplicates(checks, settings.strategies, at("strategies"));
  }
  if (value.contains("devices")) {
    const Json& list = value["devices"];
    checks.expect_array(list, at("devices"));
    for (size_t i = 0; i < list.size(); ++i) {
      settings.devices.push_back(
          static_cast<int>(checks.get_int(list[i], child_path(at("devices"), i), 0, 1023)));
    }
    reject_duplicates(checks, settings.devices, at("devices"));
  }
  if (value.contains("overlap_us")) {
    settings.overlap_us =
        get_within(checks, value["overlap_us"], at("overlap_us"), kOverlapUsBounds);
  }
  if (value.contains("raw_samples")) {
    settings.raw_samples = checks.get_bool(value["raw_samples"], at("raw_samples"));
  }
  parse_round_settings(checks, value, path, settings);
  return settings;
}

Json bench_settings_to_json(const BenchSettings& settings) {
  Json out = Json::object();
  out["warmup"] = settings.warmup;
  out["min_samples"] = settings.min_samples;
  out["min_time_s"] = settings.min_time_s;
  out["noise_target"] = settings.noise_target;
  out["timeout_s"] = settings.timeout_s;
  out["strategies"] = settings.strategies;
  out["devices"] = settings.devices;
  out["overlap_us"] = settings.overlap_us;
  out["raw_samples"] = settings.raw_samples;
  out["patterns"] = settings.patterns;
  out["inputs"] = settings.inputs;
  out["gap_us"] = settings.gap_us;
  out["gap_mode"] = settings.gap_mode;
  out["gap_touch_bytes"] = settings.gap_touch_bytes;
  out["min_rounds"] = settings.min_rounds;
  out["max_rounds"] = settings.max_rounds;
  out["round_time_s"] = settings.round_time_s;
  out["processes"] = settings.processes;
  return out;
}

}  // namespace mtc::bench::detail
