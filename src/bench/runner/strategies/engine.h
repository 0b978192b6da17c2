// The copier engine, with the options given or with one optimization off, so the table shows
// what each one buys: the engine linked into this program, or (`engine@LABEL`) another build
// loaded from a library, so that two builds are measured side by side.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runner/strategies/engine_overrides.h"
#include "runner/strategies/loaded_engine.h"
#include "runner/strategies/strategy.h"

namespace mtc::bench {

class EngineStrategy final : public Strategy {
 public:
  // `loaded`: the build to copy with; null for the linked engine.
  EngineStrategy(std::string name, mtc::CopyOptions options,
                 std::shared_ptr<const LoadedEngine> loaded = nullptr);

  std::string_view name() const override { return name_; }
  void prepare(const Route& route) override { target_ = route.target; }
  // start_copy: the caller-blocked time is how long it takes to return.
  void start(const c10::IValue& input) override;
  // get(): the engine returns only once the data is on the target.
  c10::IValue finish() override;
  std::optional<mtc::CopyStats> last_stats() const override { return stats_; }

  const mtc::CopyOptions& options() const { return options_; }
  // The pinned pool of the build this strategy copies with.
  mtc::PinnedPoolStats pinned_pool_stats() const;
  // The git revision of that build.
  std::string revision() const;

 private:
  std::string name_;
  mtc::CopyOptions options_;
  std::shared_ptr<const LoadedEngine> loaded_;
  c10::Device target_{c10::kCPU};
  mtc::CopyHandle handle_;
  LoadedEngine::Copy loaded_copy_;
  std::optional<mtc::CopyStats> stats_;
};

// CopyOptions{} with the command line's overrides applied.
mtc::CopyOptions engine_options(const EngineOverrides& overrides);

// The options as the report shows them.
nlohmann::json copy_options_json(const mtc::CopyOptions& options);

}  // namespace mtc::bench
