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

}  // namespace mtc::bench
