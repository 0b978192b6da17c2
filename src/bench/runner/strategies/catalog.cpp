#include "runner/strategies/catalog.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace mtc::bench {
namespace {

using D = Direction;

const std::vector<StrategyInfo>& catalog() {
  static const std::vector<StrategyInfo> strategies{
      {"to", "per-tensor .to(device) in a walk that rebuilds the structure", false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H}},
      {"to_nb", "per-tensor .to(device, non_blocking=true), then one stream synchronize", false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H}},
      {"pin_to_nb", "per-tensor pin_memory() then .to(device, non_blocking=true)", true, {D::kH2D}},
      {"transfer_stream",
       "torchlinops ToDevice: per-tensor non-blocking copies on a dedicated stream per device "
       "pair, ordered with events and record_stream (GPU->CPU blocking, as there)",
       true,
       {D::kH2D, D::kD2H, D::kD2D}},
      {"memcpy_batch",
       "one cudaMemcpyBatchAsync of every tensor into one allocation on a side stream; outputs "
       "are views (CUDA >= 12.8)",
       true,
       {D::kH2D, D::kD2H, D::kD2D}},
      {"engine", "mtc::start_copy ... get() with the engine options given", false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H}},
      {"engine_no_pack", "the engine without packing small tensors into chunks", false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H}},
      {"engine_no_pinned", "the engine without pinned staging", false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H}},
      {"engine_no_thread", "the engine on the caller's thread (no background worker)", false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H}},
  };
  return strategies;
}

}  // namespace

std::span<const StrategyInfo> strategy_catalog() { return catalog(); }

std::optional<LoadedVariant> split_loaded_variant(std::string_view name) {
  const size_t at = name.find('@');
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view variant = name.substr(0, at);
  const std::string_view label = name.substr(at + 1);
  const bool label_ok = !label.empty() && std::all_of(label.begin(), label.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
  if (!label_ok || !variant.starts_with("engine")) return std::nullopt;
  return LoadedVariant{variant, label};
}

const StrategyInfo* find_strategy(std::string_view name) {
  if (const auto loaded = split_loaded_variant(name)) name = loaded->variant;
  for (const StrategyInfo& info : catalog()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const StrategyInfo& info : catalog()) names.emplace_back(info.name);
  return names;
}

std::string unsupported_reason(const StrategyInfo& info, Direction direction, bool cuda_available) {
  if (info.needs_cuda && !cuda_available) return "needs a CUDA device";
  if (std::find(info.directions.begin(), info.directions.end(), direction) == info.directions.end()) {
    std::string reason = "not applicable to ";
    reason += to_string(direction);
    if (info.name == "pin_to_nb") reason += " (it pins host sources: h2d only)";
    return reason;
  }
  return {};
}

}  // namespace mtc::bench
