// Parsing of the command line's value syntax: --set, --sweep, --direction, --devices, byte sizes.
// Pure functions that throw UsageError (exit code 2) with a message naming the bad text.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "types.h"
#include "workload/bench_settings.h"

namespace mtc::bench {

struct Assignment {
  std::string name;
  std::string value;
};

// "samples=64" -> {samples, 64}. The name must be non-empty; the value may be empty.
Assignment parse_assignment(std::string_view text);

struct SweepAxis {
  std::string name;
  std::vector<std::string> values;
};

// "samples=1,4,16,64" -> {samples, [1, 4, 16, 64]}. At least one non-empty value.
SweepAxis parse_sweep(std::string_view text);

// The cartesian product of the axes, first axis outermost, as "NAME=VALUE" sets per point.
// No axes -> one empty point. Throws when two axes name the same setting.
std::vector<std::vector<std::string>> expand_sweeps(const std::vector<SweepAxis>& axes);

// "h2d", "h2d,d2h" or "all" (every direction), each name once.
std::vector<Direction> parse_directions(const std::vector<std::string>& items);

// "0,1" -> {0, 1}: non-negative, no duplicates.
std::vector<int> parse_devices(const std::vector<std::string>& items);

// "4096", "64KiB", "32MiB", "1GiB", "16KB" (SI) -> bytes. Positive.
int64_t parse_bytes(std::string_view text);

// The inverse, for --help: the largest binary unit that divides the count (32MiB, 16).
std::string bytes_text(int64_t bytes);

// "0.005" or "0.5%" -> 0.005; its range is the setting's (checked_within).
double parse_fraction(std::string_view text);

// `value`, given with `option`, when `bounds` (workload/bench_settings.h, shared with the config)
// holds it; else UsageError "--timeout nan: must be above 0 and at most 86400". NaN is refused.
int64_t checked_within(std::string_view option, int64_t value,
                       const SettingBounds<int64_t>& bounds);
// `written`: the text the value was read from, quoted in the error (--noise-target 200%).
double checked_within(std::string_view option, double value, const SettingBounds<double>& bounds,
                      std::string_view written = {});

// The same from the option's text as written: "--warmup nan: expected a whole number from 0 to
// 1000000", "--warmup 99999999999999999999: must be from 0 to 1000000" (nothing clamped).
int64_t parse_within(std::string_view option, std::string_view text,
                     const SettingBounds<int64_t>& bounds);
double parse_within(std::string_view option, std::string_view text,
                    const SettingBounds<double>& bounds);

// --seed: a whole number from 0 to 2^64 - 1, as a config's seed may be; nothing clamped.
uint64_t parse_seed(std::string_view text);

// on/off (true/false, yes/no, 1/0, enable/disable, any case) for `option`; UsageError "OPTION
// TEXT: expected on or off" for anything else.
bool parse_on_off(std::string_view option, std::string_view text);

// Checks strategy names against the catalog; throws naming the unknown one and the known ones.
std::vector<std::string> parse_strategies(const std::vector<std::string>& items);

// "hot", "step", "step-busy" or a list of them, each once.
std::vector<Pattern> parse_patterns(const std::vector<std::string>& items);
// --gap-mode: "sleep", "busy" or "both", as given.
std::string parse_gap_mode_choice(const std::string& text);

// "JOB:SIDE:ROUND" (--ab-label), e.g. "pr-123:baseline:2". JOB and SIDE are non-empty and
// free of ':'; ROUND is a non-negative integer.
AbLabel parse_ab_label(std::string_view text);

// --engine-lib items "LABEL=PATH" -> label -> path. A label is letters, digits, _ or -, once.
std::map<std::string, std::string> parse_engine_libraries(const std::vector<std::string>& items);

// "0-7,16" -> {0, ..., 7, 16}: the Linux CPU list syntax (also what sysfs local_cpulist holds).
// Throws UsageError naming the bad text.
std::vector<int> parse_cpu_list(std::string_view text);

// Splits "a,b,c" (and each element of a list already split by the parser) at commas.
std::vector<std::string> split_list(const std::vector<std::string>& items);

}  // namespace mtc::bench
