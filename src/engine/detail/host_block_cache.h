// Pageable host memory for GPU->CPU outputs, kept for reuse once the outputs are freed. A
// block of a few MiB from glibc is mapped page by page on first touch (512 page faults per
// 2 MiB) and given back to the system when it is freed (munmap, or a trim of the worker's
// heap), so a training loop that copies a batch back at every step paid those faults at every
// step, inside its copy. Outputs of at least kMinCachedBytes get their memory here instead: a
// block freed by its tensor (on whatever thread) waits in the cache for the next copy's output
// of about its size. Smaller ones come from torch's CPU allocator, as before: glibc serves them
// from its bins without mapping anything.
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "mtc/copier.h"

namespace mtc::detail {

// Below this, blocks come from torch's CPU allocator (not cached).
inline constexpr size_t kMinCachedBytes = size_t{64} << 10;
// The most idle memory the cache keeps by default; set_host_cache_limit changes it.
inline constexpr int64_t kDefaultHostCacheLimit = int64_t{256} << 20;
// A cached block serves a request of `bytes` if it is at most this fraction larger (1/4).
inline constexpr size_t kReuseSlackDivisor = 4;

// A c10::Allocator, so that outputs made with it keep resizable storages (a resize allocates
// from the cache too). Never destroyed: blocks come back whenever their tensors die, process
// exit included.
class HostBlockCache final : public c10::Allocator {
 public:
  static HostBlockCache& instance();
  explicit HostBlockCache(int64_t limit_bytes = kDefaultHostCacheLimit);
  HostBlockCache(const HostBlockCache&) = delete;  // blocks point back at their cache
  HostBlockCache& operator=(const HostBlockCache&) = delete;
  ~HostBlockCache() override;

  // At least `bytes`, 64-byte aligned, on the CPU. Throws c10::Error when out of memory.
  c10::DataPtr allocate(size_t bytes) override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  HostCacheStats stats() const;
  // Frees every idle block; returns the bytes freed.
  int64_t release_idle();
  // The most idle memory kept; 0 keeps none. Lowering it frees idle blocks at once.
  void set_limit(int64_t bytes);

 private:
  struct Block {
    HostBlockCache* cache;
    void* data;
    size_t bytes;
  };
  static void give_back(void* block) noexcept;
  void take_back(Block* block) noexcept;
  // Frees idle blocks, largest first, until at most `keep` bytes are idle (lock held).
  int64_t trim_to(int64_t keep);

  mutable std::mutex mutex_;
  std::multimap<size_t, Block*> idle_;  // by size
  int64_t idle_bytes_ = 0;
  int64_t in_use_bytes_ = 0;
  int64_t limit_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

}  // namespace mtc::detail
