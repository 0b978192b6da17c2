// One pinned pool per CUDA device. The staging of a copy to a device (CPU->GPU) or from it
// (GPU->CPU) comes from that device's pool, so GPUs that copy at the same moment share no lock
// there, and each pool sizes itself for its own device's demand: a pool merges its slabs only
// when nothing of it is in flight, which a single pool for every GPU seldom saw while they all
// copied.
#pragma once

#include <c10/core/Device.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>

#include "detail/pinned_pool.h"

namespace mtc::detail {

class PinnedPoolSet {
 public:
  // Device indices are below this (c10::DeviceIndex is 8 bits).
  static constexpr int kMaxDevices = 128;
  static_assert(kMaxDevices > std::numeric_limits<c10::DeviceIndex>::max());

  // The process's pools: cudaHostAlloc slabs, each pool limited by MTC_PINNED_POOL_LIMIT_BYTES
  // when set. Deliberately never destroyed: at static destruction the CUDA runtime may already
  // be gone, and the OS reclaims pinned pages at exit anyway. Throws c10::Error when the variable
  // is not a byte count.
  static PinnedPoolSet& instance();

  explicit PinnedPoolSet(SlabSource source = cuda_host_slabs(), int64_t limit_bytes = 0);
  PinnedPoolSet(const PinnedPoolSet&) = delete;  // owns its pools
  PinnedPoolSet& operator=(const PinnedPoolSet&) = delete;
  ~PinnedPoolSet();

  // The pool of `device` (any index but a negative one), made on first use with the set's limit.
  PinnedPool& for_device(c10::DeviceIndex device);

  // One device's figures; a device whose pool was never used has zeros and the limit.
  PinnedPoolStats stats(c10::DeviceIndex device) const;
  // Every pool's figures added up; the limit is each pool's, and a peak is the sum of the pools'
  // peaks (they may have come at different moments).
  PinnedPoolStats stats() const;
  // Frees every idle slab of every pool; returns the bytes freed.
  int64_t release_idle();
  // Each pool's limit, the ones made later too; 0: no limit.
  void set_limit(int64_t bytes);
  void reset_peaks();

 private:
  PinnedPool* existing(c10::DeviceIndex device) const;

  const SlabSource source_;
  // Making pools and changing the limit: a copy takes it only the first time its device stages.
  mutable std::mutex mutex_;
  int64_t limit_;
  std::array<std::atomic<PinnedPool*>, kMaxDevices> pools_{};
};

}  // namespace mtc::detail
