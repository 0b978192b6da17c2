// Memory for the TensorImpls of the engine's outputs. They are created on the thread that walks
// the input (often a pool worker) and freed on whichever thread drops the result (usually the
// caller's). glibc's malloc serves that pattern slowly: blocks freed by another thread go back
// to the allocating thread's arena one by one under its lock, and are sorted there again before
// reuse; on the GPU host a walk whose results another thread frees took twice as long
// (results/NOTES.md). Here a thread keeps the blocks it frees in a list of its own and hands
// them to a shared list in batches, from which allocating threads take whole batches: one lock
// per batch instead of work per block. The lines of a block that another core freed are
// requested a few allocations ahead, so their transfers overlap.
//
// With shards on (set_sharded, the default), there is a shared list for each worker pool, so that
// a GPU's workers take back the blocks its caller freed rather than another GPU's: with four GPUs
// in one process, one list for all let a copy grow 1.26-1.30x against its time alone, a list per
// pool 1.14-1.27x, in the better of two calls (results/notes/2026-11-26-night.md). A block carries
// the shard it was allocated in, and goes back there whoever frees it: a thread that copies to
// several GPUs in turn, or one that frees results it did not copy (a garbage collector's), gathers
// another shard's blocks into batches of their own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mtc::detail::impl_pool {

// Blocks go from a thread's own list to the shared one this many at a time.
inline constexpr size_t kBatch = 64;
// Each shard keeps at most this many batches; blocks beyond them go back to the system.
inline constexpr size_t kMaxSharedBatches = 256;
// Shards: 0 for threads that never worked for a pool, 1 to kShards - 1 for pools (shard_of_pool;
// with more pools than that, several share one).
inline constexpr size_t kShards = 16;
size_t shard_of_pool(int pool_id);

// The shard the calling thread takes blocks from and hands its freed blocks to (0 until set),
// modulo kShards; returns the one it replaces. A worker uses its pool's while it runs; a thread
// that starts a copy keeps the copy's pool's, for the results it frees later. With the shards on,
// the blocks the thread kept for itself go back to the shard it leaves.
size_t set_thread_shard(size_t shard);
size_t thread_shard();

// A block of `bytes` (the pool serves one size, the first asked for, with a header before it;
// other sizes go straight to operator new). Throws std::bad_alloc.
void* allocate(size_t bytes);
// Gives back a block from allocate(bytes).
void release(void* block, size_t bytes) noexcept;
// The shard a live block from allocate(bytes) was allocated in (the calling thread's, for a size
// the pool does not serve): where what the block's object holds should go back to.
size_t shard_of(const void* block, size_t bytes) noexcept;

// Turns the pool off (blocks come straight from operator new and go back to operator delete) or
// on again, for measurements that compare the two in one process; on by default. Safe at any
// time: the pool's blocks are operator new's.
void set_enabled(bool on);
bool enabled();
// On (the default), each thread takes from its shard and blocks go back to theirs; off, every
// thread uses shard 0, one shared list for the process. For measurements that compare the two in
// one process: blocks left in the other shards when they are turned off wait there until they are
// turned on again.
void set_sharded(bool on);
bool sharded();

// Blocks waiting in every shard, and in one (for tests).
int64_t shared_blocks();
int64_t shared_blocks_in(size_t shard);

}  // namespace mtc::detail::impl_pool
