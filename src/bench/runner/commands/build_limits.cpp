#include "runner/commands/build_limits.h"

#include <fmt/format.h>

#include <algorithm>

namespace mtc::bench {

BuildOptions build_options_for(uint64_t memory_bytes, int64_t workloads, bool cuda_available) {
  BuildOptions options;
  options.cuda_available = cuda_available;
  const uint64_t count = static_cast<uint64_t>(std::max<int64_t>(workloads, 1));
  const uint64_t share = memory_bytes / count;
  if (memory_bytes == 0 || share >= options.max_bytes) return options;
  options.max_bytes = share;
  options.max_bytes_origin =
      count == 1 ? fmt::format("this machine's memory, {} bytes", memory_bytes)
                 : fmt::format(
                       "this machine's memory, {} bytes, shared by the {} inputs of the "
                       "step patterns",
                       memory_bytes, count);
  return options;
}

}  // namespace mtc::bench
