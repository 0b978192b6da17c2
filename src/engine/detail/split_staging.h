// A split walk's CPU->GPU chunks staged side by side in one pinned block, so that one device
// allocation and one DMA carry every walking thread's chunks. With a chunk of its own per thread
// (copy_job_walk.cpp), the walk's thread queues one allocation and one DMA per thread once the
// last element is walked: 28-29 us for four threads in a Python copy (1 x H200,
// results/notes/2026-12-02-afternoon.md).
//
// Every output staged here moves onto one storage, which the native caching allocator owns, so
// that record_stream still finds its memory (it ignores a DataPtr that is not the allocator's
// own, as one per thread over a shared allocation would be). Tried in that form on 2026-12-02,
// the walk grew by ~47 us: the threads run out of elements together and each move counted a
// reference on that one storage, 528 atomic writes to one line from four cores at once. Here
// the walk's thread counts the references ahead, at the split, on a storage no other thread has
// seen yet (a forecast from the last split walk, an eighth more), and each thread takes its share
// with one atomic subtraction: a thread that needs more than is left counts the rest itself.
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
  // The most references counted ahead: a walk of more outputs counts the rest as it stages.
  static constexpr int64_t kMostPrepaid = 16384;

  // A block of about `bytes` from the target's pinned pool (none where the pool's limit is in
  // the way), held by `ctx`'s completion, and `views` references counted ahead on the shared
  // storage. `ctx` is the walk's own thread's.
  SplitStaging(RouteContext& ctx, int64_t bytes, int64_t views);
  SplitStaging(const SplitStaging&) = delete;
  SplitStaging& operator=(const SplitStaging&) = delete;
  // Lets go of the references counted ahead and not taken.
  ~SplitStaging();

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
  // `wanted` references to the shared storage for the calling thread's outputs: those counted
  // ahead as far as they go, the rest counted now.
  void take_references(int64_t wanted);

  PinnedBlock block_;
  int64_t alignment_;  // of every thread's place in the block, and the device chunk's start
  c10::Storage storage_;
  std::atomic<int64_t> next_{0};  // the next free place in the block, the end of those taken
  // References counted ahead and not yet taken; below zero once threads wanted more.
  std::atomic<int64_t> prepaid_{0};
};

}  // namespace mtc::detail
