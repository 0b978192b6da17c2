// How a run's plan is decided: a RunPlan (measure/run_plan.h) made from a loaded config and the
// command line. Every setting resolves here, in one place: the command line's value wins over
// the config's "bench" value, which the loader has already filled with BenchSettings' defaults
// (workload/bench_settings.h). Pure (no ATen).
#pragma once

#include <string>
#include <vector>

#include "runner/measure/run_plan.h"

namespace mtc::bench {

struct Config;      // workload/config.h
struct RunOptions;  // runner/cli/options.h

// Throws UsageError (a --devices index this machine lacks, round limits that disagree) or
// ConfigError (a bad value in the config). Without a GPU the plan is h2h only, and a GPU the
// command line asked for (an option, a --set, or `sweep_point`: the --sweep assignments `config`
// was loaded with) is refused.
RunPlan make_run_plan(const Config& config, const RunOptions& options, int cuda_device_count,
                      const std::vector<std::string>& sweep_point = {});

// Throws UsageError when the plan's processes outnumber its most rounds: each process measures
// at least one round, so --processes 2 --max-rounds 1 would measure two. Refused rather than cut
// to fewer processes, so a run does what it was asked or nothing. For the plan the processes
// are split from (not a child's share of the rounds).
void check_rounds_per_process(const RunPlan& plan);

}  // namespace mtc::bench
