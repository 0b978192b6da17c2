// Page-locked staging memory, pooled for the life of the process. Slabs are allocated with
// cudaHostAlloc and carved into exact-size blocks (256-byte granularity, no power-of-two
// rounding); a block goes back to its slab when the copy that used it has completed.
//
// The pool is sized by demand: a request that fits no free extent gets a new slab large enough
// for everything in flight plus 1/8, and when the pool is idle (nothing in flight) and holds
// several slabs, the next request replaces them by one slab sized for the most that was in
// flight at once since the last such merge, plus 1/8. So a repeated workload settles, after a
// copy or two, on one slab of about 1.125x its peak in-flight staging, and allocates nothing
// more. A limit (set_limit, or MTC_PINNED_POOL_LIMIT_BYTES for the process-wide pool) caps the
// reserved bytes: a request that only a larger pool could serve fails with a message saying so.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "mtc/copier.h"

namespace mtc::detail {

class PinnedPool;

struct PinnedBlock {
  std::byte* data = nullptr;
  int64_t bytes = 0;  // as granted (the request rounded up to the granularity)
  int32_t slab = -1;
  PinnedPool* pool = nullptr;  // the pool it goes back to

  explicit operator bool() const { return data != nullptr; }
};

using PinnedPoolStats = mtc::PinnedPoolStats;

// Where slabs come from: cudaHostAlloc in the engine; plain host memory in unit tests of the
// carving logic on machines without a GPU.
struct SlabSource {
  void* (*allocate)(int64_t bytes);  // throws on failure
  void (*free)(void* base) noexcept;
};
SlabSource cuda_host_slabs();

// The environment variable that sets the limit of each device's pool, in bytes (0: no limit).
inline constexpr const char* kPinnedPoolLimitVariable = "MTC_PINNED_POOL_LIMIT_BYTES";
// `text` as a limit: a non-negative decimal integer of bytes. Throws c10::Error naming the
// variable for anything else. Null (unset) or empty: 0.
int64_t parse_pinned_pool_limit(const char* text);
// `bytes` as a new limit (0: none): throws c10::Error, in the words of set_pinned_pool_limit, for
// a negative one.
int64_t checked_pool_limit(int64_t bytes);

class PinnedPool {
 public:
  static constexpr int64_t kGranularity = 256;
  // Slab sizes are whole pages.
  static constexpr int64_t kSlabRounding = 4 << 10;
  // A new slab holds its demand plus demand / kHeadroomDivisor, so a demand that grows a little
  // from copy to copy does not need a new slab every time.
  static constexpr int64_t kHeadroomDivisor = 8;

  explicit PinnedPool(SlabSource source = cuda_host_slabs(), int64_t limit_bytes = 0);
  PinnedPool(const PinnedPool&) = delete;  // owns slabs
  PinnedPool& operator=(const PinnedPool&) = delete;
  ~PinnedPool();

  // A block of at least `bytes`. Throws c10::Error when cudaHostAlloc fails or when only a
  // pool larger than the limit could serve the request; the pool is unchanged then.
  PinnedBlock acquire(int64_t bytes);
  // The same, but an empty block instead of the limit error (allocation failures still throw):
  // for callers that can make do with less.
  PinnedBlock try_acquire(int64_t bytes);
  // Allocates nothing: the node that a block's extent may need in the free list was made when
  // the block was acquired.
  void release(const PinnedBlock& block) noexcept;
  // Gives `block` back to the pool it came from (nothing for an empty block).
  static void give_back(const PinnedBlock& block) noexcept {
    if (block) block.pool->release(block);
  }

  // reserved_bytes counts a slab from the moment it is asked of the SlabSource.
  PinnedPoolStats stats() const;
  // Frees every slab with no block in use; returns the bytes freed.
  int64_t release_idle();
  // 0: no limit. Frees idle slabs while the pool is larger than the new limit (blocks in use
  // stay where they are; the pool then only shrinks as they come back and release_idle runs).
  void set_limit(int64_t bytes);
  // Restarts both peaks from the current figures.
  void reset_peaks();

 private:
  using FreeExtents = std::map<int64_t, int64_t>;  // offset -> length
  struct Slab {
    std::byte* base = nullptr;  // null: a free entry (its index may be reused)
    int64_t bytes = 0;
    FreeExtents free;  // coalesced
    bool idle() const {
      return base != nullptr && free.size() == 1 && free.begin()->second == bytes;
    }
  };
  // Slabs the pool has let go of, given back to the SlabSource once the lock is released: no
  // CUDA call (cudaHostAlloc, cudaFreeHost: milliseconds) runs under the lock, so releases and
  // other requests of the pool's device go on meanwhile.
  using Detached = std::vector<void*>;
  // Shared by acquire and try_acquire: an empty block when the limit is in the way.
  PinnedBlock acquire_block(int64_t bytes);
  // Allocates nothing (a carved extent's node is reused for what is left of it).
  bool try_carve(int32_t slab_index, int64_t bytes, PinnedBlock& out);
  // At least `count` spare nodes for the free lists; throws std::bad_alloc, the pool unchanged.
  void keep_spare_nodes(size_t count);
  // A new slab of `bytes`, or of less (but at least `minimum`) to stay within the limit;
  // -1 when the limit leaves no room for `minimum` even after freeing idle slabs. Unlocks
  // `lock` to free `detached` and to allocate, and holds it again when it returns or throws;
  // meanwhile growing_ is set, and requests that find no room wait for this slab.
  int32_t add_slab(std::unique_lock<std::mutex>& lock, int64_t bytes, int64_t minimum,
                   Detached& detached);
  void detach_slab(Slab& slab, Detached& detached) noexcept;
  void free_detached(Detached& detached) noexcept;
  int64_t release_idle_locked(Detached& detached);
  // Several slabs and nothing in flight: one slab for the demand seen since the last merge.
  void merge_idle_slabs(std::unique_lock<std::mutex>& lock, Detached& detached);
  // Clears growing_ and wakes the requests that waited for the new slab.
  void end_growth() noexcept;
  void note_granted(int64_t bytes);

  SlabSource source_;
  mutable std::mutex mutex_;
  std::condition_variable grown_;  // signalled when a slab allocation ends
  bool growing_ = false;           // a slab is being allocated with the lock released
  std::vector<Slab> slabs_;
  // A node for each block in use and the next one, made ahead: a release whose extent touches
  // no free one needs a node, and release must not fail (it runs in destructors and completion
  // callbacks, where an exception ends the process).
  std::vector<FreeExtents::node_type> spare_nodes_;
  size_t blocks_in_use_ = 0;
  int64_t live_slabs_ = 0;
  int64_t reserved_ = 0;  // live slabs and those being allocated
  int64_t in_use_ = 0;
  int64_t limit_ = 0;
  int64_t peak_reserved_ = 0;
  int64_t peak_in_use_ = 0;
  int64_t demand_since_merge_ = 0;  // most in use at once since the last merge
  int64_t slab_allocations_ = 0;
  int64_t slab_frees_ = 0;
};

}  // namespace mtc::detail
