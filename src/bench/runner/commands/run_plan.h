// From a loaded config and the command line to a RunPlan: the command line's overrides win
// over the config's "bench" settings, which win over the defaults. Pure (no ATen).
#pragma once

#include "runner/cli/options.h"
#include "runner/measure/run_plan.h"

#include <nlohmann/json.hpp>

#include "workload/config.h"

namespace mtc::bench {

// Throws UsageError (a --devices index this machine lacks) or ConfigError (a bad value in the
// config). Without a GPU the plan is h2h only.
RunPlan make_run_plan(const Config& config, const RunOptions& options, int cuda_device_count);

// The plan as the report's "settings" block (engine options are added by the caller, which
// knows the engine's defaults).
nlohmann::json plan_to_json(const RunPlan& plan);

}  // namespace mtc::bench
