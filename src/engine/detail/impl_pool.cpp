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
std::atomic<bool> shards_on{true};

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

// Blocks freed by this thread that belong to another shard, gathered per shard into batches.
thread_local void* t_foreign[kShards][kBatch];
thread_local size_t t_foreign_count[kShards];

// The calling thread's shard, or 0 with the shards off.
size_t own_shard_index() { return shards_on.load(std::memory_order_relaxed) ? t_shard : 0; }

// Every block of the served size starts with a header naming the shard it was allocated in, so
// that whoever frees it returns it there; the header keeps the block's default alignment.
constexpr size_t kHeader = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
static_assert(kHeader >= sizeof(uint32_t));
void* with_header(void* raw, size_t shard) {
  *static_cast<uint32_t*>(raw) = static_cast<uint32_t>(shard);
  return static_cast<char*>(raw) + kHeader;
}
void* raw_of(void* block) { return static_cast<char*>(block) - kHeader; }
size_t shard_of_block(const void* block) {
  return *reinterpret_cast<const uint32_t*>(static_cast<const char*>(block) - kHeader);
}

// Adds a full batch of raw blocks to `shard`'s list, or frees them when it is full.
void push_batch(size_t shard, const Batch& batch) noexcept {
  Shard& s = shared().shards[shard];
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.batches.size() < kMaxSharedBatches) {
      try {
        s.batches.push_back(batch);
        return;
      } catch (...) {
      }
    }
  }
  for (void* raw : batch) ::operator delete(raw);
}

// Keeps a raw block of another shard than the thread's until a whole batch can go back to `home`
// under one lock.
void stage_for(size_t home, void* raw) noexcept {
  t_foreign[home][t_foreign_count[home]++] = raw;
  if (t_foreign_count[home] < kBatch) return;
  Batch batch;
  std::copy_n(t_foreign[home], kBatch, batch.begin());
  t_foreign_count[home] = 0;
  push_batch(home, batch);
}

// Moves the thread's oldest kBatch blocks (or all, if fewer) to its shard's shared list.
void hand_over() noexcept {
  Batch batch{};
  const size_t n = std::min(t_count, kBatch);
  std::copy_n(t_blocks, n, batch.begin());
  std::memmove(t_blocks, t_blocks + n, (t_count - n) * sizeof(void*));
  t_count -= n;
  if (n == kBatch) return push_batch(own_shard_index(), batch);
  // A partial batch (a thread exiting): back to the system.
  for (size_t i = 0; i < n; ++i) ::operator delete(batch[i]);
}

struct Flusher {
  ~Flusher() {
    t_exited = true;
    while (t_count > 0) hand_over();
    for (size_t shard = 0; shard < kShards; ++shard) {
      for (size_t i = 0; i < t_foreign_count[shard]; ++i) ::operator delete(t_foreign[shard][i]);
      t_foreign_count[shard] = 0;
    }
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

// The thread's list holds raw blocks (headers first) of its own shard.
void* allocate(size_t bytes) {
  Shared& s = shared();
  size_t served = s.block_bytes.load(std::memory_order_relaxed);
  if (served == 0 && s.block_bytes.compare_exchange_strong(served, bytes)) served = bytes;
  if (bytes != served) return ::operator new(bytes);
  const size_t shard_index = own_shard_index();
  if (t_exited || !pool_on.load(std::memory_order_relaxed))
    return with_header(::operator new(kHeader + bytes), shard_index);
  (void)&t_flusher;  // constructed on first use in this thread, flushes at its exit
  if (t_count == 0) {
    {
      Shard& shard = s.shards[shard_index];
      std::lock_guard<std::mutex> lock(shard.mutex);
      if (!shard.batches.empty()) {
        std::copy_n(shard.batches.back().begin(), kBatch, t_blocks);
        t_count = kBatch;
        shard.batches.pop_back();
      }
    }
    for (size_t i = 1; i <= std::min(kPrefetchDistance, t_count); ++i)
      prefetch_for_write(t_blocks[t_count - i], kHeader + bytes);
  }
  if (t_count == 0) return with_header(::operator new(kHeader + bytes), shard_index);
  void* raw = t_blocks[--t_count];
  if (t_count >= kPrefetchDistance)
    prefetch_for_write(t_blocks[t_count - kPrefetchDistance], kHeader + bytes);
  // A block of the thread's list came from its shard, unless the shards were switched since.
  return with_header(raw, shard_index);
}

void release(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  if (bytes != shared().block_bytes.load(std::memory_order_relaxed)) {
    ::operator delete(block);
    return;
  }
  void* raw = raw_of(block);
  if (t_exited || !pool_on.load(std::memory_order_relaxed)) {
    ::operator delete(raw);
    return;
  }
  (void)&t_flusher;
  const size_t own = own_shard_index();
  const size_t home = shards_on.load(std::memory_order_relaxed) ? shard_of_block(block) : 0;
  if (home != own) {
    // Another shard's block (freed by a thread that did not copy it, or copies to several GPUs).
    return stage_for(home, raw);
  }
  // Keep up to two batches for this thread's own allocations; hand the oldest on.
  if (t_count == 2 * kBatch) hand_over();
  t_blocks[t_count++] = raw;
}

size_t shard_of(const void* block, size_t bytes) noexcept {
  if (bytes != shared().block_bytes.load(std::memory_order_relaxed)) return t_shard;
  return shard_of_block(block);
}

void set_enabled(bool on) { pool_on.store(on, std::memory_order_relaxed); }

bool enabled() { return pool_on.load(std::memory_order_relaxed); }

void set_sharded(bool on) { shards_on.store(on, std::memory_order_relaxed); }

bool sharded() { return shards_on.load(std::memory_order_relaxed); }

size_t shard_of_pool(int pool_id) { return 1 + static_cast<size_t>(pool_id) % (kShards - 1); }

size_t set_thread_shard(size_t shard) {
  shard %= kShards;
  if (shard != t_shard && !t_exited && shards_on.load(std::memory_order_relaxed)) {
    // The blocks this thread kept are its old shard's: they go back there, as another shard's
    // blocks freed here do, instead of being handed out as the new shard's.
    (void)&t_flusher;
    for (size_t i = 0; i < t_count; ++i) stage_for(t_shard, t_blocks[i]);
    // The new shard's blocks freed here earlier, waiting for a whole batch (fewer than one), are
    // the thread's own again.
    t_count = t_foreign_count[shard];
    std::copy_n(t_foreign[shard], t_count, t_blocks);
    t_foreign_count[shard] = 0;
  }
  return std::exchange(t_shard, shard);
}

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
