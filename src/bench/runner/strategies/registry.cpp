#include "runner/strategies/registry.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "errors.h"
#include "runner/strategies/catalog.h"

namespace mtc::bench {

std::unique_ptr<Strategy> make_strategy(std::string_view name, const mtc::CopyOptions& engine_base,
                                        const LoadedEngines& engines) {
  std::shared_ptr<const LoadedEngine> engine;
  if (const auto loaded = split_loaded_variant(name)) {
    const auto it = engines.find(std::string(loaded->label));
    if (it == engines.end()) {
      throw UsageError(
          fmt::format("strategy {}: no engine build is loaded as `{}` (give --engine-lib {}=PATH)",
                      name, loaded->label, loaded->label));
    }
    engine = it->second;
  }
  const StrategyInfo* info = find_strategy(name);
  if (info == nullptr) throw UsageError("unknown strategy: " + std::string(name));
  return info->make(StrategySetup{name, engine_base, std::move(engine)});
}

}  // namespace mtc::bench
