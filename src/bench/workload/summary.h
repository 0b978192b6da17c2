// What a workload is made of: printed before a benchmark and stored in its report.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "workload/workload.h"

namespace mtc::bench {

// The engine packs contiguous CPU tensors of 1 B .. 256 KiB (mtc::kMaxPackedTensorBytes).
inline constexpr int64_t kPackableMinBytes = 1;

struct SizeBucket {
  std::string label;  // "4-64 KiB"
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;  // inclusive; -1: unbounded
  int64_t tensors = 0;
  int64_t bytes = 0;
};

struct DtypeShare {
  int64_t tensors = 0;
  int64_t bytes = 0;
};

struct WorkloadSummary {
  int64_t tensors = 0;
  int64_t bytes = 0;           // payload: numel * element size, summed over tensor leaves
  int64_t passthrough = 0;     // non-tensor leaves (strings, numbers, None, ...)
  int64_t containers = 0;      // lists, tuples and dicts
  int64_t max_depth = 0;       // containers on the longest path from the root to a leaf
  int64_t smallest_bytes = 0;  // over tensor leaves; 0 when there are none
  int64_t largest_bytes = 0;
  int64_t non_contiguous = 0;
  int64_t packable_tensors = 0;  // contiguous CPU tensors of 1 B .. 256 KiB
  int64_t packable_bytes = 0;
  std::vector<SizeBucket> size_histogram;    // fixed buckets, empty ones included
  std::map<std::string, DtypeShare> dtypes;  // "float32" -> share
  std::map<std::string, int64_t> memory;     // "pageable", "pinned", "cuda:0" -> tensors
  std::map<std::string, int64_t> demoted;    // from BuildInfo: requested kind -> built pageable

  double packable_fraction() const;  // of the tensors; 0 when there are none
  nlohmann::json to_json() const;
};

WorkloadSummary summarize_workload(const c10::IValue& data);
// Includes what the build changed (leaves built pageable for lack of CUDA).
WorkloadSummary summarize_workload(const c10::IValue& data, const BuildInfo& info);
void print_summary(std::ostream& out, const WorkloadSummary& summary);

}  // namespace mtc::bench
