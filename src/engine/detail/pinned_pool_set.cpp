#include "detail/pinned_pool_set.h"

#include <c10/util/Exception.h>

#include <cstdlib>

namespace mtc::detail {

PinnedPoolSet& PinnedPoolSet::instance() {
  static PinnedPoolSet* pools = new PinnedPoolSet(
      cuda_host_slabs(), parse_pinned_pool_limit(std::getenv(kPinnedPoolLimitVariable)));
  return *pools;
}

PinnedPoolSet::PinnedPoolSet(SlabSource source, int64_t limit_bytes)
    : source_(source), limit_(limit_bytes) {
  TORCH_CHECK(limit_bytes >= 0, "mtc: pinned pool limit must be >= 0 bytes, got ", limit_bytes);
}

PinnedPoolSet::~PinnedPoolSet() {
  for (std::atomic<PinnedPool*>& pool : pools_) delete pool.load();
}

PinnedPool* PinnedPoolSet::existing(c10::DeviceIndex device) const {
  TORCH_CHECK(device >= 0, "mtc: no pinned pool for device index ", static_cast<int>(device));
  return pools_[static_cast<size_t>(device)].load(std::memory_order_acquire);
}

PinnedPool& PinnedPoolSet::for_device(c10::DeviceIndex device) {
  if (PinnedPool* pool = existing(device)) return *pool;
  std::lock_guard<std::mutex> lock(mutex_);
  std::atomic<PinnedPool*>& slot = pools_[static_cast<size_t>(device)];
  if (slot.load(std::memory_order_relaxed) == nullptr)
    slot.store(new PinnedPool(source_, limit_), std::memory_order_release);
  return *slot.load(std::memory_order_relaxed);
}

PinnedPoolStats PinnedPoolSet::stats(c10::DeviceIndex device) const {
  if (const PinnedPool* pool = existing(device)) return pool->stats();
  PinnedPoolStats none;
  std::lock_guard<std::mutex> lock(mutex_);
  none.limit_bytes = limit_;
  return none;
}

PinnedPoolStats PinnedPoolSet::stats() const {
  PinnedPoolStats sum;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sum.limit_bytes = limit_;
  }
  for (const std::atomic<PinnedPool*>& slot : pools_) {
    const PinnedPool* pool = slot.load(std::memory_order_acquire);
    if (pool == nullptr) continue;
    const PinnedPoolStats s = pool->stats();
    sum.reserved_bytes += s.reserved_bytes;
    sum.peak_reserved_bytes += s.peak_reserved_bytes;
    sum.in_use_bytes += s.in_use_bytes;
    sum.peak_in_use_bytes += s.peak_in_use_bytes;
    sum.slabs += s.slabs;
    sum.slab_allocations += s.slab_allocations;
    sum.slab_frees += s.slab_frees;
  }
  return sum;
}

int64_t PinnedPoolSet::release_idle() {
  int64_t freed = 0;
  for (std::atomic<PinnedPool*>& slot : pools_)
    if (PinnedPool* pool = slot.load(std::memory_order_acquire)) freed += pool->release_idle();
  return freed;
}

void PinnedPoolSet::set_limit(int64_t bytes) {
  // Held while the pools take it, so that a pool made meanwhile starts with the new limit.
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = checked_pool_limit(bytes);
  for (std::atomic<PinnedPool*>& slot : pools_)
    if (PinnedPool* pool = slot.load(std::memory_order_relaxed)) pool->set_limit(bytes);
}

void PinnedPoolSet::reset_peaks() {
  for (std::atomic<PinnedPool*>& slot : pools_)
    if (PinnedPool* pool = slot.load(std::memory_order_acquire)) pool->reset_peaks();
}

}  // namespace mtc::detail
