#include "detail/impl_pool.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace mtc::detail::impl_pool {
namespace {

using Batch = std::array<void*, kBatch>;

// A shard's lock and list sit on lines of their own: taking a batch writes them, and the other
// shards' threads should not have to fetch them again for it.
struct alignas(128) Shard {
  std::mutex mutex;
  std::vector<Batch> batches;
};

struct Shared {
  std::array<Shard, kShards> shards;
  // The size served, fixed by the first allocation; read at every allocation and release, so
  // kept apart from the locks.
  alignas(128) std::atomic<size_t> block_bytes{0};
};

alignas(64) std::atomic<bool> pool_on{true};
std::atomic<bool> shards_on{false};

// Never destroyed: threads may release blocks while the process exits.
Shared& shared() {
  static Shared* s = new Shared;
  return *s;
}

// The calling thread's blocks, the most recently freed last. Plain thread-locals (no
// destructor), so they stay usable while the thread's other thread-locals are destroyed; the
// Flusher hands them over at exit.
thread_local void* t_blocks[2 * kBatch];
thread_local size_t t_count = 0;
thread_local bool t_exited = false;
thread_local size_t t_shard = 0;

// The calling thread's shard's list, or shard 0's with the shards off.
Shard& own_shard() {
  return shared().shards[shards_on.load(std::memory_order_relaxed) ? t_shard : 0];
}

// Moves the thread's oldest kBatch blocks (or all, if fewer) to the shared list.
void hand_over() noexcept {
  Batch batch{};
  const size_t n = std::min(t_count, kBatch);
  std::copy_n(t_blocks, n, batch.begin());
  std::memmove(t_blocks, t_blocks + n, (t_count - n) * sizeof(void*));
  t_count -= n;
  Shard& shard = own_shard();
  if (n == kBatch) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    if (shard.batches.size() < kMaxSharedBatches) {
      try {
        shard.batches.push_back(batch);
        return;
      } catch (...) {
      }
    }
  }
  // A partial batch (a thread exiting), or the shared list is full: back to the system.
  for (size_t i = 0; i < n; ++i) ::operator delete(batch[i]);
}

struct Flusher {
  ~Flusher() {
    t_exited = true;
    while (t_count > 0) hand_over();
  }
};
thread_local Flusher t_flusher;

// Blocks freed on another core are in that core's cache: writing to one costs a transfer of
// each of its lines. Asking for the lines of the block handed out a few allocations from now
// overlaps those transfers instead of waiting for each in turn.
constexpr size_t kPrefetchDistance = 4;
void prefetch_for_write(const void* block, size_t bytes) {
#if defined(__GNUC__)
  const auto* p = static_cast<const char*>(block);
  for (size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(p + offset, 1, 3);
#else
  (void)block;
  (void)bytes;
#endif
}

}  // namespace

void* allocate(size_t bytes) {
  Shared& s = shared();
  size_t served = s.block_bytes.load(std::memory_order_relaxed);
  if (served == 0 && s.block_bytes.compare_exchange_strong(served, bytes)) served = bytes;
  if (bytes != served || t_exited || !pool_on.load(std::memory_order_relaxed))
    return ::operator new(bytes);
  (void)&t_flusher;  // constructed on first use in this thread, flushes at its exit
  if (t_count == 0) {
    {
      Shard& shard = own_shard();
      std::lock_guard<std::mutex> lock(shard.mutex);
      if (!shard.batches.empty()) {
        std::copy_n(shard.batches.back().begin(), kBatch, t_blocks);
        t_count = kBatch;
        shard.batches.pop_back();
      }
    }
    for (size_t i = 1; i <= std::min(kPrefetchDistance, t_count); ++i)
      prefetch_for_write(t_blocks[t_count - i], bytes);
  }
  if (t_count == 0) return ::operator new(bytes);
  void* block = t_blocks[--t_count];
  if (t_count >= kPrefetchDistance)
    prefetch_for_write(t_blocks[t_count - kPrefetchDistance], bytes);
  return block;
}

void release(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  if (bytes != shared().block_bytes.load(std::memory_order_relaxed) || t_exited ||
      !pool_on.load(std::memory_order_relaxed)) {
    ::operator delete(block);
    return;
  }
  (void)&t_flusher;
  // Keep up to two batches for this thread's own allocations; hand the oldest on.
  if (t_count == 2 * kBatch) hand_over();
  t_blocks[t_count++] = block;
}

void set_enabled(bool on) { pool_on.store(on, std::memory_order_relaxed); }

bool enabled() { return pool_on.load(std::memory_order_relaxed); }

void set_sharded(bool on) { shards_on.store(on, std::memory_order_relaxed); }

bool sharded() { return shards_on.load(std::memory_order_relaxed); }

size_t shard_of_pool(int pool_id) { return 1 + static_cast<size_t>(pool_id) % (kShards - 1); }

size_t set_thread_shard(size_t shard) { return std::exchange(t_shard, shard % kShards); }

size_t thread_shard() { return t_shard; }

int64_t shared_blocks_in(size_t shard) {
  Shard& s = shared().shards[shard % kShards];
  std::lock_guard<std::mutex> lock(s.mutex);
  return static_cast<int64_t>(s.batches.size() * kBatch);
}

int64_t shared_blocks() {
  int64_t blocks = 0;
  for (size_t shard = 0; shard < kShards; ++shard) blocks += shared_blocks_in(shard);
  return blocks;
}

}  // namespace mtc::detail::impl_pool
