// Memory for the TensorImpls of the engine's outputs. They are created on the thread that walks
// the input (often a pool worker) and freed on whichever thread drops the result (usually the
// caller's). glibc's malloc serves that pattern slowly: blocks freed by another thread go back
// to the allocating thread's arena one by one under its lock, and are sorted there again before
// reuse; on the GPU host a walk whose results another thread frees took twice as long
// (results/NOTES.md). Here a thread keeps the blocks it frees in a list of its own and hands
// them to a shared list in batches, from which allocating threads take whole batches: one lock
// per batch instead of work per block. The lines of a block that another core freed are
// requested a few allocations ahead, so their transfers overlap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mtc::detail::impl_pool {

// Blocks go from a thread's own list to the shared one this many at a time.
inline constexpr size_t kBatch = 64;
// The shared list keeps at most this many batches; blocks beyond them go back to the system.
inline constexpr size_t kMaxSharedBatches = 256;

// A block of `bytes` (the pool serves one size, the first asked for; other sizes go straight
// to operator new). Throws std::bad_alloc.
void* allocate(size_t bytes);
// Gives back a block from allocate(bytes).
void release(void* block, size_t bytes) noexcept;

// Turns the pool off (blocks come straight from operator new and go back to operator delete) or
// on again, for measurements that compare the two in one process; on by default. Safe at any
// time: the pool's blocks are operator new's.
void set_enabled(bool on);
bool enabled();

// Blocks waiting in the shared list (for tests).
int64_t shared_blocks();

}  // namespace mtc::detail::impl_pool
