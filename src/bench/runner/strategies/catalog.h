// The strategies the benchmark compares, as data: names, what each does, where it applies.
// Pure (no ATen) so the command line and `list` can use it; registry.h builds the objects.
#pragma once

#include "runner/measure/direction.h"

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
const StrategyInfo* find_strategy(std::string_view name);
std::vector<std::string> strategy_names();

inline constexpr std::string_view kBaselineStrategy = "to";

// Why `name` cannot run `direction` here, or empty when it can.
std::string unsupported_reason(const StrategyInfo& info, Direction direction, bool cuda_available);

}  // namespace mtc::bench
