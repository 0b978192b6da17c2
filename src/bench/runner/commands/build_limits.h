// How large a workload this machine may build: the builder's own limits (workload/workload.h),
// with the byte limit lowered to the machine's physical memory, shared among the workloads a
// run holds at once. The builder's 64 GiB alone is more than many machines have: a config over
// their memory grew until the machine ran out, where it now fails in a second, naming the place.
#pragma once

#include <cstdint>

#include "workload/workload.h"

namespace mtc::bench {

// The limits for one of `workloads` built side by side (the step patterns' inputs) on a machine
// of `memory_bytes` (0: unknown, the builder's limits alone).
BuildOptions build_options_for(uint64_t memory_bytes, int64_t workloads, bool cuda_available);

}  // namespace mtc::bench
