// HostBlockCache, the pageable memory of GPU->CPU outputs: which requests it serves, when a
// freed block is reused, its limit, and tensors made with it. No GPU needed.
#include "detail/host_block_cache.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "mtc/copier.h"

namespace mtc::detail {
namespace {

constexpr size_t kKiB = 1024;

at::Tensor bytes_from(HostBlockCache& cache, int64_t bytes) {
  return at::detail::empty_generic({bytes}, &cache, c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   at::kByte, std::nullopt);
}

TEST(HostBlockCache, SmallRequestsGoToTorchsAllocatorUncached) {
  HostBlockCache cache;
  {
    c10::DataPtr small = cache.allocate(kMinCachedBytes - 1);
    ASSERT_NE(small.get(), nullptr);
  }
  const HostCacheStats s = cache.stats();
  EXPECT_EQ(s.hits + s.misses, 0);
  EXPECT_EQ(s.idle_bytes, 0);
}

TEST(HostBlockCache, AFreedBlockServesTheNextRequestOfItsSize) {
  HostBlockCache cache;
  void* first = nullptr;
  {
    c10::DataPtr block = cache.allocate(2048 * kKiB);
    first = block.get();
    ASSERT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0U);
    std::memset(first, 1, 2048 * kKiB);
    EXPECT_EQ(cache.stats().in_use_bytes, 2048 * static_cast<int64_t>(kKiB));
  }
  EXPECT_EQ(cache.stats().idle_bytes, 2048 * static_cast<int64_t>(kKiB));
  c10::DataPtr again = cache.allocate(2000 * kKiB);  // within a quarter: reused
  EXPECT_EQ(again.get(), first);
  const HostCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.idle_bytes, 0);
}

TEST(HostBlockCache, ABlockMoreThanAQuarterLargerIsNotReused) {
  HostBlockCache cache;
  { c10::DataPtr big = cache.allocate(1024 * kKiB); }
  c10::DataPtr half = cache.allocate(512 * kKiB);
  EXPECT_EQ(cache.stats().misses, 2);
  EXPECT_EQ(cache.stats().idle_bytes, 1024 * static_cast<int64_t>(kKiB));
}

TEST(HostBlockCache, KeepsAtMostItsLimitIdle) {
  HostBlockCache cache(1024 * kKiB);
  {
    c10::DataPtr a = cache.allocate(768 * kKiB);
    c10::DataPtr b = cache.allocate(768 * kKiB);
  }
  EXPECT_EQ(cache.stats().idle_blocks, 1);
  EXPECT_EQ(cache.stats().idle_bytes, 768 * static_cast<int64_t>(kKiB));
  cache.set_limit(0);  // lowering the limit frees at once
  EXPECT_EQ(cache.stats().idle_bytes, 0);
  { c10::DataPtr c = cache.allocate(768 * kKiB); }
  EXPECT_EQ(cache.stats().idle_bytes, 0);  // a limit of 0 keeps nothing
  EXPECT_THROW(cache.set_limit(-1), c10::Error);
}

TEST(HostBlockCache, ReleaseIdleFreesEveryIdleBlockAndSaysHowMuch) {
  HostBlockCache cache;
  c10::DataPtr alive = cache.allocate(256 * kKiB);
  {
    c10::DataPtr a = cache.allocate(128 * kKiB);
    c10::DataPtr b = cache.allocate(512 * kKiB);
  }
  EXPECT_EQ(cache.release_idle(), 640 * static_cast<int64_t>(kKiB));
  const HostCacheStats s = cache.stats();
  EXPECT_EQ(s.idle_blocks, 0);
  EXPECT_EQ(s.in_use_bytes, 256 * static_cast<int64_t>(kKiB));
}

TEST(HostBlockCache, BlocksFreedOnAnotherThreadComeBack) {
  HostBlockCache cache;
  c10::DataPtr block = cache.allocate(300 * kKiB);
  void* data = block.get();
  std::thread([moved = std::move(block)]() mutable { moved.clear(); }).join();
  EXPECT_EQ(cache.stats().idle_blocks, 1);
  c10::DataPtr again = cache.allocate(300 * kKiB);
  EXPECT_EQ(again.get(), data);
}

TEST(HostBlockCache, TensorsMadeWithItCanBeResizedAndGiveTheirMemoryBack) {
  HostBlockCache cache;
  {
    at::Tensor t = bytes_from(cache, 128 * kKiB);
    ASSERT_TRUE(t.storage().resizable());
    t.fill_(7);
    t.resize_({static_cast<int64_t>(512 * kKiB)});  // the storage grows through the cache
    EXPECT_EQ(t[0].item<uint8_t>(), 7);
    EXPECT_EQ(cache.stats().misses, 2);
  }
  EXPECT_EQ(cache.stats().in_use_bytes, 0);
  EXPECT_EQ(cache.stats().idle_blocks, 2);
}

TEST(HostBlockCache, ThePublicFunctionsReachTheProcessCache) {
  const int64_t limit = mtc::host_cache_stats().limit_bytes;
  EXPECT_EQ(limit, kDefaultHostCacheLimit);
  mtc::set_host_cache_limit(1);
  EXPECT_EQ(mtc::host_cache_stats().limit_bytes, 1);
  EXPECT_GE(mtc::release_cached_host_memory(), 0);
  EXPECT_EQ(mtc::host_cache_stats().idle_bytes, 0);
  mtc::set_host_cache_limit(limit);
}

}  // namespace
}  // namespace mtc::detail
