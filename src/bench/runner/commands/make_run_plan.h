// How a run's plan is decided: a RunPlan (measure/run_plan.h) made from a loaded config and the
// command line. Every setting resolves here, in one place: the command line's value wins over
// the config's "bench" value, which the loader has already filled with BenchSettings' defaults
// (workload/bench_settings.h). Pure (no ATen).
#pragma once

#include "runner/measure/run_plan.h"

namespace mtc::bench {

struct Config;      // workload/config.h
struct RunOptions;  // runner/cli/options.h

// Throws UsageError (a --devices index this machine lacks, round limits that disagree) or
// ConfigError (a bad value in the config). Without a GPU the plan is h2h only.
RunPlan make_run_plan(const Config& config, const RunOptions& options, int cuda_device_count);

}  // namespace mtc::bench
