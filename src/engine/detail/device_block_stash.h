// Device memory for the next copy's packed chunks, allocated by a worker after the last copy.
//
// A CPU->GPU copy gives each packed chunk device memory from torch's caching allocator as it
// queues the chunk's DMA; a split walk's thread does so for every thread's chunk, one after the
// other, on the copy's critical path. Each request takes the allocator's lock and walks its
// pools, and after a training step's gap those lines are cold: a CPU->GPU step's allocations
// (device memory and pinned staging) took 20 us more than back to back, summed over its threads
// (1 x H200, results/notes/2026-12-03-night.md).
//
// Here a pool worker that ran a copy's job to a GPU, once the job has handed over its result,
// allocates blocks for as many chunks as that copy queued, each a quarter larger than the chunk
// it stands for, on the copy's stream (the stream an allocation is tied to), and keeps them for
// the device. The next copy to that device on the same stream takes the smallest kept block
// that fits each chunk instead of asking the allocator. A copy that finds nothing to take (a
// first copy, another stream, larger chunks) allocates as before. A copy whose job its caller
// ran itself takes kept blocks but makes none: the caller's time is the copy's.
//
// The blocks are made right after a copy, never at another time (the early wake of a forecast
// copy, driver_warmup.h). A program may begin a CUDA graph capture in global mode on another
// thread as soon as get() returns, while a refill is under way: an allocation that takes a new
// segment from the driver would invalidate it, so the refill allocates in thread-local capture
// mode, which leaves other threads' captures alone. Nothing is kept for a stream that is
// capturing. The copy's own allocations on the workers, before get() returns, are still made in
// the mode of the program's threads: a capture begun in global mode on another thread while a
// copy is in flight can be invalidated by them, as by any thread's allocation, torch's included.
//
// What a device keeps is at most kMaxBlocks blocks of at most kMaxBlockBytes, held until a later
// refill replaces them or the stash is turned off: torch counts them as allocated.
//
// On by default; set_enabled(false), which frees what is kept, for benchmarks that compare the
// two in one process (BM_EngineCopy bit 268435456) and for tests that count device memory.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/cuda/CUDAStream.h>

#include <cstddef>
#include <cstdint>

namespace mtc::detail::device_block_stash {

// Chunks larger than this are always allocated on the spot (the reference batch's are ~40 KB).
inline constexpr size_t kMaxBlockBytes = size_t{1} << 20;
// The most blocks one device keeps (a split walk queues one chunk per walking thread).
inline constexpr size_t kMaxBlocks = 16;

// A kept block of at least `bytes` allocated on `stream` (of `stream`'s device), or an empty
// DataPtr when none fits. Notes the request for the next refill either way.
c10::DataPtr take(const c10::cuda::CUDAStream& stream, size_t bytes);

// Allocates, on `stream`, blocks for the requests take() noted for its device since the last
// refill, and keeps them in place of what was kept. Run by a worker after a copy's job; never
// throws: an allocation that fails leaves the next copy to allocate as it would without the
// stash.
void refill(const c10::cuda::CUDAStream& stream) noexcept;

// What `device` keeps (for tests and the memory-steadiness run), read at one time.
struct KeptMemory {
  size_t blocks = 0;
  int64_t bytes = 0;
};
KeptMemory kept(c10::DeviceIndex device);

// Blocks handed out by take() since the process started (for tests).
uint64_t taken_total();

// Process-wide, on by default; off at exit (what is kept then stays).
void set_enabled(bool on);
bool enabled();

}  // namespace mtc::detail::device_block_stash
