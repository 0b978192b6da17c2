// Builds strategy objects by name, with the factory of their catalog entry (catalog.h).
#pragma once

#include <memory>
#include <string_view>

#include "runner/strategies/loaded_engine.h"
#include "runner/strategies/strategy.h"

namespace mtc::bench {

// A fresh strategy (one per case and GPU thread: strategies hold streams and events).
// `engine_base` is the CopyOptions the `engine` variants start from; `engines` the builds that
// `VARIANT@LABEL` names copy with. Throws UsageError for a name the catalog does not know, or a
// label no build was loaded for.
std::unique_ptr<Strategy> make_strategy(std::string_view name, const mtc::CopyOptions& engine_base,
                                        const LoadedEngines& engines = {});

}  // namespace mtc::bench
