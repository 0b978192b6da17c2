// A split walk's CPU->GPU chunks staged side by side in one pinned block, so that one device
// allocation and one DMA carry every walking thread's chunks: with a chunk of its own per thread
// (copy_job_walk.cpp), the walk's thread otherwise queues one allocation and one DMA per thread
// after the last element, 28-29 us for four threads in a Python copy (results/NOTES.md,
// 2026-12-02). Every output staged here becomes a view of one storage, which the native caching
// allocator owns, so that record_stream still finds it.
#pragma once

#include <c10/core/Storage.h>

#include <atomic>
#include <cstdint>
#include <span>

#include "detail/pinned_pool.h"
#include "detail/routes.h"

namespace mtc::detail {

class SplitStaging {
 public:
  // A block of about `bytes` from the target's pinned pool (none where the pool's limit is in
  // the way), held by `ctx`'s completion. `ctx` is the walk's own thread's.
  SplitStaging(RouteContext& ctx, int64_t bytes);
  SplitStaging(const SplitStaging&) = delete;
  SplitStaging& operator=(const SplitStaging&) = delete;

  // Safe for several walking threads at once. Stages `packed` (not yet staged) at the next free
  // place of the block and moves its outputs onto the shared storage; false, with nothing done,
  // when it does not fit or its chunks' alignment would not survive the move.
  bool stage(RouteContext& ctx, PackedChunks& packed);
  // After every thread has staged: one device allocation, one DMA, the storage's memory; then
  // empties each of `staged` (those stage() took). Nothing when none was staged.
  void queue(RouteContext& ctx, std::span<PackedChunks* const> staged);
  // What each thread's place in the block is a multiple of, for these options: a thread staging
  // `bytes` takes round_up(bytes, place_alignment).
  static int64_t place_alignment(const CopyOptions& options);

 private:
  PinnedBlock block_;
  int64_t alignment_;  // of every thread's place in the block, and the device chunk's start
  c10::Storage storage_;
  std::atomic<int64_t> next_{0};  // the next free place in the block, the end of those taken
};

}  // namespace mtc::detail
