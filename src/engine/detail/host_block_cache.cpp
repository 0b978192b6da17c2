#include "detail/host_block_cache.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace mtc::detail {
namespace {
constexpr size_t kAlignment = 64;  // as torch's CPU allocator
constexpr size_t kPage = 4096;     // new blocks are whole pages: a page-sized slack costs nothing
}  // namespace

HostBlockCache& HostBlockCache::instance() {
  static HostBlockCache* cache = new HostBlockCache();
  return *cache;
}

HostBlockCache::HostBlockCache(int64_t limit_bytes) : limit_(limit_bytes) {
  TORCH_CHECK(limit_bytes >= 0, "mtc: host cache limit must be >= 0 bytes, got ", limit_bytes);
}

HostBlockCache::~HostBlockCache() {
  // Only caches made for tests are destroyed, after their blocks came back.
  const std::lock_guard<std::mutex> lock(mutex_);
  trim_to(0);
}

c10::DataPtr HostBlockCache::allocate(size_t bytes) {
  if (bytes < kMinCachedBytes) return c10::GetCPUAllocator()->allocate(bytes);
  Block* block = nullptr;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = idle_.lower_bound(bytes);
    if (it != idle_.end() && it->first <= bytes + bytes / kReuseSlackDivisor) {
      block = it->second;
      idle_.erase(it);
      idle_bytes_ -= static_cast<int64_t>(block->bytes);
      in_use_bytes_ += static_cast<int64_t>(block->bytes);
      ++hits_;
    }
  }
  if (block == nullptr) {
    const size_t size = (bytes + kPage - 1) / kPage * kPage;
    void* data = std::aligned_alloc(kAlignment, size);
    TORCH_CHECK(data != nullptr, "mtc: out of host memory allocating ", size,
                " bytes for a GPU->CPU output");
    try {
      block = new Block{this, data, size};
    } catch (const std::bad_alloc&) {
      std::free(data);
      throw;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    in_use_bytes_ += static_cast<int64_t>(size);
    ++misses_;
  }
  return c10::DataPtr(block->data, block, &HostBlockCache::give_back, c10::Device(c10::kCPU));
}

void HostBlockCache::copy_data(void* dest, const void* src, std::size_t count) const {
  default_copy_data(dest, src, count);
}

void HostBlockCache::give_back(void* block) noexcept {
  auto* b = static_cast<Block*>(block);
  b->cache->take_back(b);
}

void HostBlockCache::take_back(Block* block) noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  in_use_bytes_ -= static_cast<int64_t>(block->bytes);
  const auto bytes = static_cast<int64_t>(block->bytes);
  bool kept = false;
  if (idle_bytes_ + bytes <= limit_) {
    try {
      idle_.emplace(block->bytes, block);
      idle_bytes_ += bytes;
      kept = true;
    } catch (...) {  // no memory for the map's node: give the block back to the system
    }
  }
  if (!kept) {
    std::free(block->data);
    delete block;
  }
}

int64_t HostBlockCache::trim_to(int64_t keep) {
  int64_t freed = 0;
  while (idle_bytes_ > keep && !idle_.empty()) {
    const auto largest = std::prev(idle_.end());
    Block* block = largest->second;
    idle_.erase(largest);
    idle_bytes_ -= static_cast<int64_t>(block->bytes);
    freed += static_cast<int64_t>(block->bytes);
    std::free(block->data);
    delete block;
  }
  return freed;
}

HostCacheStats HostBlockCache::stats() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  HostCacheStats s;
  s.idle_bytes = idle_bytes_;
  s.idle_blocks = static_cast<int64_t>(idle_.size());
  s.in_use_bytes = in_use_bytes_;
  s.limit_bytes = limit_;
  s.hits = hits_;
  s.misses = misses_;
  return s;
}

int64_t HostBlockCache::release_idle() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return trim_to(0);
}

void HostBlockCache::set_limit(int64_t bytes) {
  TORCH_CHECK(bytes >= 0, "mtc::set_host_cache_limit: the limit must be >= 0 bytes, got ", bytes);
  const std::lock_guard<std::mutex> lock(mutex_);
  limit_ = bytes;
  trim_to(limit_);
}

}  // namespace mtc::detail
