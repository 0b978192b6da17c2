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


inline constexpr std::string_view kBaselineStrategy = "to";

// Why `name` cannot run `direction` here, or empty when it can.
std::string unsupported_reason(const StrategyInfo& info, Direction direction, bool cuda_available);

}  // namespace mtc::bench
