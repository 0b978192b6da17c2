// The packing layout: where each small tensor goes inside which chunk. A pure function of
// sizes, element sizes and options, so it is unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mtc::detail {

struct PackCandidate {
  int64_t leaf;          // index of the tensor leaf in the caller's list
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
  std::vector<PackItem> items;  // in candidate order
  std::vector<PackChunk> chunks;
  std::vector<int64_t> too_large;  // leaves that would not fit an empty chunk: not packed
};

// True for the sizes the engine packs: 1 byte to kMaxPackedTensorBytes inclusive.
bool is_packable_size(int64_t bytes);

// The greedy layout, one tensor at a time: plan_packing uses it for a list of candidates, the
// engine's walk while it discovers the tensors.
class ChunkPacker {
 public:
  // Requires min_alignment >= 1 and max_chunk_bytes > 0.
  ChunkPacker(int64_t min_alignment, int64_t max_chunk_bytes)
      : min_alignment_(min_alignment), max_chunk_bytes_(max_chunk_bytes) {}

  struct Place {
    int64_t chunk;   // 0, 1, ...: a new chunk is opened when the tensor would end past the limit
    int64_t offset;  // from the chunk's start
  };
  // True when a tensor of `bytes` fits an empty chunk; only such tensors may be added.
  bool fits(int64_t bytes) const { return bytes <= max_chunk_bytes_; }
  // Where a tensor of `bytes` (1 .. max_chunk_bytes) with that element size goes.
  Place add(int64_t bytes, int64_t element_size);
  // Chunks opened so far, and the payload of the last one (end of its last item).
  int64_t chunks() const { return chunk_ + 1; }
  int64_t last_chunk_bytes() const { return used_; }

 private:
  int64_t min_alignment_;
  int64_t max_chunk_bytes_;
  int64_t chunk_ = -1;
  int64_t used_ = 0;
};

// Greedy, in order: each tensor starts at the next multiple of lcm(min_alignment, its
// element size) (which is max(...) for powers of two); a chunk is closed when the next
// tensor would end past max_chunk_bytes.
// Requires min_alignment >= 1 and max_chunk_bytes > 0.
PackPlan plan_packing(std::span<const PackCandidate> candidates, int64_t min_alignment,
                      int64_t max_chunk_bytes);

}  // namespace mtc::detail
