// The packing layout: where each small tensor goes inside which chunk. A pure function of
// sizes, element sizes and options, so it is unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mtc::detail {

struct PackCandidate {
  int64_t leaf;          // index of the tensor leaf in the flattened input
  int64_t bytes;         // payload, > 0
  int64_t element_size;  // bytes of one element
};

struct PackItem {
  int64_t leaf;
  int64_t chunk;
  int64_t offset;  // from the chunk's start
  int64_t bytes;
};

struct PackChunk {
  int64_t bytes = 0;       // payload: end of its last item, padding included
  int64_t first_item = 0;  // items [first_item, first_item + item_count) of PackPlan::items
  int64_t item_count = 0;
};

struct PackPlan {
  std::vector<PackItem> items;    // in candidate order
  std::vector<PackChunk> chunks;
  std::vector<int64_t> too_large;  // leaves that would not fit an empty chunk: not packed
};

// True for the sizes the engine packs: 1 byte to kMaxPackedTensorBytes inclusive.
bool is_packable_size(int64_t bytes);

// Greedy, in order: each tensor starts at the next multiple of lcm(min_alignment, its
// element size) (which is max(...) for powers of two); a chunk is closed when the next
// tensor would end past max_chunk_bytes.
// Requires min_alignment >= 1 and max_chunk_bytes > 0.
PackPlan plan_packing(std::span<const PackCandidate> candidates, int64_t min_alignment,
                      int64_t max_chunk_bytes);

}  // namespace mtc::detail
