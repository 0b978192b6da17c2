// The runner: for each direction and pattern, builds the cases of every strategy (one per
// GPU), prepares them, measures them in interleaved rounds on the GPU threads and collects the
// report entries. Owns the NVTX phase structure
// and, with --profile, the cudaProfilerStart/Stop bracket.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "report/report.h"
#include "runner/env/host_canary.h"
#include "runner/measure/case_runner.h"
#include "runner/measure/progress.h"
#include "runner/measure/run_plan.h"
#include "runner/strategies/loaded_engine.h"
#include "types.h"

namespace mtc::bench {

struct RunOutcome {
  std::vector<Entry> entries;
  std::vector<std::string> notes;
  std::vector<CanaryRecord> canary;  // read before every round of every block
};

// workloads: the config's workload built with successive seeds (at least one). The hot pattern
// copies the first; the step pattern rotates through all of them. engines: the builds loaded for
// the plan's `VARIANT@LABEL` strategies.
RunOutcome run_benchmarks(const std::vector<c10::IValue>& workloads, const RunPlan& plan,
                          const LoadedEngines& engines, Progress& progress);

// The input of a direction on one GPU: for h2d and h2h the workload itself, or, when `several`
// GPU threads copy at once, a structure of its own for each (own_structure, tensors cloned);
// for d2h and d2d one of its own moved to the GPU (untimed, synchronized).
c10::IValue input_for(const c10::IValue& workload, Direction direction, int device,
                      bool several = false);

// The route of a direction for one GPU thread, or empty with `why` set when it cannot run.
std::optional<Route> route_for(Direction direction, int device, int cuda_device_count,
                               std::string& why);

}  // namespace mtc::bench
