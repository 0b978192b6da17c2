#include "detail/pack_plan.h"

#include "mtc/copier.h"

#include <numeric>

namespace mtc::detail {

bool is_packable_size(int64_t bytes) { return bytes >= 1 && bytes <= kMaxPackedTensorBytes; }

PackPlan plan_packing(std::span<const PackCandidate> candidates, int64_t min_alignment,
                      int64_t max_chunk_bytes) {
  PackPlan plan;
  plan.items.reserve(candidates.size());
  PackChunk current;
  auto close_chunk = [&] {
    if (current.item_count > 0) plan.chunks.push_back(current);
    current = PackChunk{0, static_cast<int64_t>(plan.items.size()), 0};
  };
  for (const PackCandidate& c : candidates) {
    if (c.bytes > max_chunk_bytes) {
      plan.too_large.push_back(c.leaf);
      continue;
    }
    // lcm rather than max: equal for the usual powers of two, and for any other alignment
    // still a multiple of both, so every element stays aligned.
    const int64_t alignment = std::lcm(min_alignment, c.element_size);
    int64_t offset = (current.bytes + alignment - 1) / alignment * alignment;
    if (offset + c.bytes > max_chunk_bytes) {
      close_chunk();
      offset = 0;
    }
    plan.items.push_back({c.leaf, static_cast<int64_t>(plan.chunks.size()), offset, c.bytes});
    current.bytes = offset + c.bytes;
    ++current.item_count;
  }
  close_chunk();
  return plan;
}

}  // namespace mtc::detail
