#include "runner/strategies/registry.h"

#include "errors.h"
#include "runner/strategies/catalog.h"
#include "runner/strategies/engine.h"
#include "runner/strategies/memcpy_batch.h"
#include "runner/strategies/per_tensor.h"
#include "runner/strategies/transfer_stream.h"

#include <fmt/format.h>

#include <string>

namespace mtc::bench {

std::unique_ptr<Strategy> make_strategy(std::string_view name, const mtc::CopyOptions& engine_base,
                                        const LoadedEngines& engines) {
  if (const auto loaded = split_loaded_variant(name)) {
    const auto it = engines.find(std::string(loaded->label));
    if (it == engines.end()) {
      throw UsageError(fmt::format("strategy {}: no engine build is loaded as `{}` (give --engine-lib {}=PATH)", name,
                                   loaded->label, loaded->label));
    }
    return std::make_unique<EngineStrategy>(std::string(name), engine_variant_options(loaded->variant, engine_base),
                                            it->second);
  }
  if (name == "to") return std::make_unique<ToStrategy>();
  if (name == "to_nb") return std::make_unique<ToNonBlockingStrategy>();
  if (name == "pin_to_nb") return std::make_unique<PinToNonBlockingStrategy>();
  if (name == "transfer_stream") return std::make_unique<TransferStreamStrategy>();
  if (name == "memcpy_batch") return std::make_unique<MemcpyBatchStrategy>();
  if (name == "engine" || name == "engine_no_pack" || name == "engine_no_pinned" ||
      name == "engine_no_thread") {
    return std::make_unique<EngineStrategy>(std::string(name), engine_variant_options(name, engine_base));
  }
  throw UsageError("unknown strategy: " + std::string(name));
}

}  // namespace mtc::bench
