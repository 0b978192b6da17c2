// The strategies the benchmark compares, as data: names, what each does, where it applies.
// Pure (no ATen) so the command line and `list` can use it; registry.h builds the objects.
#pragma once

#include "runner/measure/direction.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mtc::bench {

struct StrategyInfo {
  std::string_view name;
  std::string_view summary;
  bool needs_cuda;
  std::vector<Direction> directions;
};

// In report order; `to` first: it is the baseline every speedup is measured against.
std::span<const StrategyInfo> strategy_catalog();
// A catalog name, or an engine variant copying with a loaded build: `VARIANT@LABEL`
// (`engine@base`), which has its variant's entry.
const StrategyInfo* find_strategy(std::string_view name);
std::vector<std::string> strategy_names();

// `engine@base` -> {"engine", "base"}: a variant of the engine copying with the build loaded as
// LABEL (--engine-lib LABEL=PATH). Empty for any other name; LABEL is letters, digits, _ and -.
struct LoadedVariant {
  std::string_view variant;
  std::string_view label;
};
std::optional<LoadedVariant> split_loaded_variant(std::string_view name);

// An in-process A/B pairs `VARIANT@base` (the baseline build) with `VARIANT@cand` when a
// candidate build is loaded too, else with `VARIANT`, this program's own engine. Loading both
// sides as libraries makes the two differ in nothing but their code: a linked engine and a
// loaded one differ in how they are linked (thread-local storage, for one), which showed as
// ~2 % between identical builds on an H100 host (results/NOTES.md).
inline constexpr std::string_view kBaselineEngineLabel = "base";
inline constexpr std::string_view kCandidateEngineLabel = "cand";
// The two names `VARIANT@base` may pair with, preferred first.
std::vector<std::string> ab_partners(std::string_view baseline_name);

inline constexpr std::string_view kBaselineStrategy = "to";

// Why `name` cannot run `direction` here, or empty when it can.
std::string unsupported_reason(const StrategyInfo& info, Direction direction, bool cuda_available);

}  // namespace mtc::bench
