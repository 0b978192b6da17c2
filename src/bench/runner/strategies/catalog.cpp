#include "runner/strategies/catalog.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "runner/strategies/engine.h"
#include "runner/strategies/memcpy_batch.h"
#include "runner/strategies/per_tensor.h"
#include "runner/strategies/transfer_stream.h"

namespace mtc::bench {
namespace {

using D = Direction;

template <class S>
std::unique_ptr<Strategy> make(const StrategySetup& /*setup*/) {
  return std::make_unique<S>();
}

// The engine with the base options changed by `Edit`: one optimization off, or one option on, so
// that the table shows what each one buys.
template <void (*Edit)(mtc::CopyOptions&)>
std::unique_ptr<Strategy> make_engine(const StrategySetup& setup) {
  mtc::CopyOptions options = setup.engine_base;
  Edit(options);
  return std::make_unique<EngineStrategy>(std::string(setup.name), options, setup.engine);
}

void as_given(mtc::CopyOptions& /*options*/) {}
void no_pack(mtc::CopyOptions& options) { options.pack_cpu_tensors = false; }
void no_pinned(mtc::CopyOptions& options) { options.use_pinned_staging = false; }
void no_thread(mtc::CopyOptions& options) { options.use_background_thread = false; }
void pinned_out(mtc::CopyOptions& options) { options.pinned_host_outputs = true; }

const std::vector<StrategyInfo>& catalog() {
  static const std::vector<StrategyInfo> strategies{
      {"to",
       "per-tensor .to(device) in a walk that rebuilds the structure",
       false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H},
       make<ToStrategy>},
      {"to_nb",
       "per-tensor .to(device, non_blocking=true), then one stream synchronize",
       false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H},
       make<ToNonBlockingStrategy>},
      {"pin_to_nb",
       "per-tensor pin_memory() then .to(device, non_blocking=true)",
       true,
       {D::kH2D},
       make<PinToNonBlockingStrategy>},
      {"transfer_stream",
       "torchlinops ToDevice: per-tensor non-blocking copies on a dedicated stream per device "
       "pair, ordered with events and record_stream (GPU->CPU blocking, as there)",
       true,
       {D::kH2D, D::kD2H, D::kD2D},
       make<TransferStreamStrategy>},
      {"memcpy_batch",
       "one cudaMemcpyBatchAsync of every tensor into one allocation on a side stream; outputs "
       "are views (CUDA >= 12.8)",
       true,
       {D::kH2D, D::kD2H, D::kD2D},
       make<MemcpyBatchStrategy>},
      {"engine",
       "mtc::start_copy ... get() with the engine options given",
       false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H},
       make_engine<as_given>},
      {"engine_no_pack",
       "the engine without packing small tensors into chunks",
       false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H},
       make_engine<no_pack>},
      {"engine_no_pinned",
       "the engine without pinned staging",
       false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H},
       make_engine<no_pinned>},
      {"engine_no_thread",
       "the engine on the caller's thread (no background worker)",
       false,
       {D::kH2D, D::kD2H, D::kD2D, D::kH2H},
       make_engine<no_thread>},
      {"engine_pinned_out",
       "the engine with pinned outputs (pinned_host_outputs): the DMA lands in them, no host "
       "copy after it",
       true,
       {D::kD2H},
       make_engine<pinned_out>},
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
  if (std::find(info.directions.begin(), info.directions.end(), direction) ==
      info.directions.end()) {
    std::string reason = "not applicable to ";
    reason += to_string(direction);
    if (info.name == "pin_to_nb") reason += " (it pins host sources: h2d only)";
    return reason;
  }
  return {};
}

}  // namespace mtc::bench
