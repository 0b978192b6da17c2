// Page-locked staging memory, pooled for the life of the process. Slabs are allocated with
// cudaHostAlloc once and carved into exact-size blocks (256-byte granularity, no power-of-two
// rounding); a block goes back to its slab when the copy that used it has completed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace mtc::detail {

struct PinnedBlock {
  std::byte* data = nullptr;
  int64_t bytes = 0;  // as granted (the request rounded up to the granularity)
  int32_t slab = -1;

  explicit operator bool() const { return data != nullptr; }
};

struct PinnedPoolStats {
  int64_t reserved_bytes = 0;  // pinned memory held by the pool
  int64_t in_use_bytes = 0;    // granted and not yet released
  int64_t slabs = 0;
  int64_t slab_allocations = 0;  // cudaHostAlloc calls so far (should stop growing once warm)
};

// Where slabs come from: cudaHostAlloc in the engine; plain host memory in unit tests of the
// carving logic on machines without a GPU.
struct SlabSource {
  void* (*allocate)(int64_t bytes);  // throws on failure
  void (*free)(void* base) noexcept;
};
SlabSource cuda_host_slabs();

class PinnedPool {
 public:
  static constexpr int64_t kGranularity = 256;
  static constexpr int64_t kMinSlabBytes = 8 << 20;
  static constexpr int64_t kSlabRounding = 2 << 20;

  // The process-wide pool. Deliberately never destroyed: at static destruction the CUDA
  // runtime may already be gone, and the OS reclaims pinned pages at exit anyway.
  static PinnedPool& instance();

  explicit PinnedPool(SlabSource source = cuda_host_slabs()) : source_(source) {}
  PinnedPool(const PinnedPool&) = delete;  // owns slabs
  PinnedPool& operator=(const PinnedPool&) = delete;
  ~PinnedPool();

  // Throws (c10::Error) when cudaHostAlloc fails.
  PinnedBlock acquire(int64_t bytes);
  void release(const PinnedBlock& block) noexcept;
  PinnedPoolStats stats() const;

 private:
  struct Slab {
    std::byte* base = nullptr;
    int64_t bytes = 0;
    std::map<int64_t, int64_t> free;  // offset -> length, coalesced
  };
  bool try_carve(int32_t slab_index, int64_t bytes, PinnedBlock& out);

  SlabSource source_;
  mutable std::mutex mutex_;
  std::vector<Slab> slabs_;
  int64_t in_use_ = 0;
  int64_t slab_allocations_ = 0;
};

}  // namespace mtc::detail
