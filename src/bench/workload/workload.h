// Turns a validated Config into the nested c10::IValue the benchmark copies.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <map>
#include <string>

#include "workload/config.h"

namespace mtc::bench {

struct BuildOptions {
  // Leaves whose memory kind is pinned or cuda:N need CUDA; without it they are built as
  // pageable CPU tensors (and BuildInfo counts them) so the tool still runs on CPU-only CI.
  bool cuda_available = false;
  // Guards against specs that would exhaust the machine or run for hours: a build that would
  // allocate more bytes (tensors, literal strings and dict keys), or instantiate more nodes
  // (containers, leaves, a literal value's elements), throws ConfigError instead.
  uint64_t max_bytes = uint64_t{64} << 30;
  int64_t max_nodes = 50'000'000;
  // What max_bytes is, for the error: a caller that lowers it to fit the machine says so.
  std::string max_bytes_origin = "the build limit";
};

// What a build would allocate: its nodes and its bytes, as the limits count them.
struct WorkloadTotals {
  int64_t nodes = 0;
  uint64_t bytes = 0;
};

// What a build did besides returning the data.
struct BuildInfo {
  // Requested memory kind ("pinned", "cuda:0") -> tensors built as pageable instead because
  // CUDA was not available.
  std::map<std::string, int64_t> demoted;
};

// Deterministic: same config + seed -> bit-identical tensors, any machine, any thread count.
// Throws ConfigError when a drawn size is impossible (overflow, over max_bytes) or a cuda:N
// leaf names a device that does not exist.
c10::IValue build_workload(const Config& config, const BuildOptions& options);
c10::IValue build_workload(const Config& config, const BuildOptions& options, BuildInfo* info);

// The totals of build_workload(config, options) without building it: the same walk and draws
// (sizes come from a stream of their own, values are not drawn), no tensor allocated, no
// container kept. Throws the ConfigError the build would throw at the same limits, so that
// `validate --no-build` refuses a config that would exhaust the machine in seconds.
WorkloadTotals count_workload(const Config& config, const BuildOptions& options);

}  // namespace mtc::bench
