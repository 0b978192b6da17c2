#include "detail/pinned_pool.h"

#include "detail/cuda_check.h"

#include <algorithm>
#include <iterator>

namespace mtc::detail {
namespace {
int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

void* cuda_host_allocate(int64_t bytes) {
  void* base = nullptr;
  // Portable so that copies to and from any GPU of the process may use the memory.
  MTC_CUDA_CHECK(cudaHostAlloc(&base, static_cast<size_t>(bytes), cudaHostAllocPortable));
  return base;
}
void cuda_host_free(void* base) noexcept { (void)cudaFreeHost(base); }
}  // namespace

SlabSource cuda_host_slabs() { return SlabSource{&cuda_host_allocate, &cuda_host_free}; }

PinnedPool::~PinnedPool() {
  for (Slab& slab : slabs_) source_.free(slab.base);
}

PinnedPool& PinnedPool::instance() {
  static PinnedPool* pool = new PinnedPool();
  return *pool;
}

bool PinnedPool::try_carve(int32_t slab_index, int64_t bytes, PinnedBlock& out) {
  Slab& slab = slabs_[slab_index];
  for (auto it = slab.free.begin(); it != slab.free.end(); ++it) {
    if (it->second < bytes) continue;
    const int64_t offset = it->first;
    const int64_t remaining = it->second - bytes;
    slab.free.erase(it);
    if (remaining > 0) slab.free.emplace(offset + bytes, remaining);
    out = PinnedBlock{slab.base + offset, bytes, slab_index};
    return true;
  }
  return false;
}

PinnedBlock PinnedPool::acquire(int64_t bytes) {
  TORCH_CHECK(bytes > 0, "mtc: pinned block of ", bytes, " bytes requested");
  bytes = round_up(bytes, kGranularity);
  std::lock_guard<std::mutex> lock(mutex_);
  PinnedBlock block;
  for (int32_t i = 0; i < static_cast<int32_t>(slabs_.size()); ++i) {
    if (try_carve(i, bytes, block)) {
      in_use_ += bytes;
      return block;
    }
  }
  const int64_t slab_bytes = std::max(kMinSlabBytes, round_up(bytes, kSlabRounding));
  void* base = source_.allocate(slab_bytes);
  ++slab_allocations_;
  Slab slab;
  slab.base = static_cast<std::byte*>(base);
  slab.bytes = slab_bytes;
  slab.free.emplace(0, slab_bytes);
  slabs_.push_back(std::move(slab));
  const bool carved = try_carve(static_cast<int32_t>(slabs_.size() - 1), bytes, block);
  TORCH_INTERNAL_ASSERT(carved);
  in_use_ += bytes;
  return block;
}

void PinnedPool::release(const PinnedBlock& block) noexcept {
  if (!block) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Slab& slab = slabs_[block.slab];
  int64_t offset = block.data - slab.base;
  int64_t length = block.bytes;
  auto next = slab.free.lower_bound(offset);
  if (next != slab.free.end() && offset + length == next->first) {
    length += next->second;
    next = slab.free.erase(next);
  }
  if (next != slab.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      length += prev->second;
      slab.free.erase(prev);
    }
  }
  slab.free.emplace(offset, length);
  in_use_ -= block.bytes;
}

PinnedPoolStats PinnedPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  PinnedPoolStats s;
  for (const Slab& slab : slabs_) s.reserved_bytes += slab.bytes;
  s.in_use_bytes = in_use_;
  s.slabs = static_cast<int64_t>(slabs_.size());
  s.slab_allocations = slab_allocations_;
  return s;
}

}  // namespace mtc::detail
