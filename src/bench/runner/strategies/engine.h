// The copier engine, with the options given or with one optimization off, so the table shows
// what each one buys.
#pragma once

#include "runner/strategies/engine_overrides.h"
#include "runner/strategies/strategy.h"

#include <nlohmann/json.hpp>

#include <string>

namespace mtc::bench {

class EngineStrategy final : public Strategy {
 public:
  EngineStrategy(std::string name, mtc::CopyOptions options);

  std::string_view name() const override { return name_; }
  void prepare(const Route& route) override { target_ = route.target; }
  // start_copy: the caller-blocked time is how long it takes to return.
  void start(const c10::IValue& input) override;
  // get(): the engine returns only once the data is on the target.
  c10::IValue finish() override;
  std::optional<mtc::CopyStats> last_stats() const override { return stats_; }

  const mtc::CopyOptions& options() const { return options_; }

 private:
  std::string name_;
  mtc::CopyOptions options_;
  c10::Device target_{c10::kCPU};
  mtc::CopyHandle handle_;
  std::optional<mtc::CopyStats> stats_;
};

// CopyOptions{} with the command line's overrides applied.
mtc::CopyOptions engine_options(const EngineOverrides& overrides);

// The options as the report shows them.
nlohmann::json copy_options_json(const mtc::CopyOptions& options);

// The options of each engine variant, from the base options the command line gave.
mtc::CopyOptions engine_variant_options(std::string_view variant, const mtc::CopyOptions& base);

}  // namespace mtc::bench
