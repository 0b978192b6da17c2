#include "workload/detail/bench_settings_parser.h"

#include <fmt/format.h>

#include <algorithm>

namespace mtc::bench::detail {
namespace {

constexpr double kOneDay = 86400.0;

template <typename T>
void reject_duplicates(const JsonChecks& checks, const std::vector<T>& items,
                       const std::string& path) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (std::find(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(i), items[i]) !=
        items.begin() + static_cast<std::ptrdiff_t>(i)) {
      checks.fail(child_path(path, i), fmt::format("duplicate entry {}", items[i]));
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
                                           settings.patterns.back()));
      }
    }
    reject_duplicates(checks, settings.patterns, at("patterns"));
  }
  if (value.contains("inputs")) {
    settings.inputs = static_cast<int>(
        checks.get_int(value["inputs"], at("inputs"), kInputsBounds.min, kInputsBounds.max));
  }
  if (value.contains("gap_us")) {
    settings.gap_us =
        checks.get_number(value["gap_us"], at("gap_us"), kGapUsBounds.min, kGapUsBounds.max);
  }
  if (value.contains("gap_mode")) {
    settings.gap_mode = checks.get_string(value["gap_mode"], at("gap_mode"));
    if (settings.gap_mode != "sleep" && settings.gap_mode != "busy" &&
        settings.gap_mode != "both") {
      checks.fail(at("gap_mode"),
                  fmt::format("unknown gap mode {} (known: sleep, busy, both)", settings.gap_mode));
    }
  }
  if (value.contains("gap_touch_bytes")) {
    settings.gap_touch_bytes = checks.get_int(value["gap_touch_bytes"], at("gap_touch_bytes"),
                                              kGapTouchBytesBounds.min, kGapTouchBytesBounds.max);
  }
  if (value.contains("min_rounds")) {
    settings.min_rounds = static_cast<int>(checks.get_int(value["min_rounds"], at("min_rounds"),
                                                          kRoundsBounds.min, kRoundsBounds.max));
  }
  if (value.contains("max_rounds")) {
    settings.max_rounds = static_cast<int>(checks.get_int(value["max_rounds"], at("max_rounds"),
                                                          kRoundsBounds.min, kRoundsBounds.max));
  }
  if (const std::string error = round_limits_error(settings.min_rounds, settings.max_rounds);
      !error.empty()) {
    checks.fail(at(value.contains("max_rounds") ? "max_rounds" : "min_rounds"), error);
  }
  if (value.contains("processes")) {
    settings.processes = static_cast<int>(checks.get_int(
        value["processes"], at("processes"), kProcessesBounds.min, kProcessesBounds.max));
  }
  if (value.contains("round_time_s")) {
    settings.round_time_s =
        checks.get_number(value["round_time_s"], at("round_time_s"), 0.0, kOneDay);
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
    settings.warmup = static_cast<int>(checks.get_int(value["warmup"], at("warmup"), 0, 1'000'000));
  }
  if (value.contains("min_samples")) {
    settings.min_samples =
        static_cast<int>(checks.get_int(value["min_samples"], at("min_samples"), 1, 10'000'000));
  }
  if (value.contains("min_time_s")) {
    settings.min_time_s = checks.get_number(value["min_time_s"], at("min_time_s"), 0.0, kOneDay);
  }
  if (value.contains("noise_target")) {
    settings.noise_target = checks.get_number(value["noise_target"], at("noise_target"), 0.0, 1.0);
  }
  if (value.contains("timeout_s")) {
    settings.timeout_s = checks.get_number(value["timeout_s"], at("timeout_s"), 0.0, kOneDay);
    if (settings.timeout_s <= 0.0) checks.fail(at("timeout_s"), "must be > 0");
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
        checks.get_number(value["overlap_us"], at("overlap_us"), 0.0, kOneDay * 1e6);
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
