// The strategies the benchmark compares, as data: names, what each does, where it applies, and
// the factory that builds one, so that a strategy is named in one place only. This header is
// pure (no ATen) so the command line and `list` can use it; catalog.cpp, which holds the
// factories, is not. registry.h builds strategies by name.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "types.h"

namespace mtc {
struct CopyOptions;
}  // namespace mtc

namespace mtc::bench {

class LoadedEngine;
class Strategy;

// What a factory builds a strategy from: the name it goes by (`engine@base` for a variant that
// copies with a loaded build), the CopyOptions the engine variants start from, and the build
// that copies (null: the engine linked into this program).
struct StrategySetup {
  std::string_view name;
  const mtc::CopyOptions& engine_base;
  std::shared_ptr<const LoadedEngine> engine;
};
using StrategyFactory = std::unique_ptr<Strategy> (*)(const StrategySetup& setup);

struct StrategyInfo {
  std::string_view name;
  std::string_view summary;
  bool needs_cuda;
  std::vector<Direction> directions;
  StrategyFactory make;
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

// Why `name` cannot run `direction` here, or empty when it can.
std::string unsupported_reason(const StrategyInfo& info, Direction direction, bool cuda_available);

}  // namespace mtc::bench
