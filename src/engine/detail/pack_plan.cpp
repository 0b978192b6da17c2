#include "detail/pack_plan.h"

#include <numeric>

#include "detail/round_up.h"
#include "mtc/copier.h"

namespace mtc::detail {

bool is_packable_size(int64_t bytes) { return bytes >= 1 && bytes <= kMaxPackedTensorBytes; }

ChunkPacker::Place ChunkPacker::add(int64_t bytes, int64_t element_size) {
  // lcm rather than max: equal for the usual powers of two, and for any other alignment still
  // a multiple of both, so every element stays aligned. The modulo skips the gcd loop in the
  // common case of an element size dividing the alignment.
  const int64_t alignment =
      min_alignment_ % element_size == 0 ? min_alignment_ : std::lcm(min_alignment_, element_size);
  int64_t offset = round_up(used_, alignment);
  if (chunk_ < 0 || offset + bytes > max_chunk_bytes_) {
    ++chunk_;
    offset = 0;
  }
  used_ = offset + bytes;
  return {chunk_, offset};
}

PackPlan plan_packing(std::span<const PackCandidate> candidates, int64_t min_alignment,
                      int64_t max_chunk_bytes) {
  PackPlan plan;
  plan.items.reserve(candidates.size());
  ChunkPacker packer(min_alignment, max_chunk_bytes);
  for (const PackCandidate& c : candidates) {
    if (!packer.fits(c.bytes)) {
      plan.too_large.push_back(c.leaf);
      continue;
    }
    const ChunkPacker::Place place = packer.add(c.bytes, c.element_size);
    if (place.chunk == static_cast<int64_t>(plan.chunks.size())) {
      plan.chunks.push_back(PackChunk{0, static_cast<int64_t>(plan.items.size()), 0});
    }
    plan.items.push_back({c.leaf, place.chunk, place.offset, c.bytes});
    PackChunk& chunk = plan.chunks.back();
    chunk.bytes = place.offset + c.bytes;
    ++chunk.item_count;
  }
  return plan;
}

}  // namespace mtc::detail
