// A device's path through the CUDA driver, warmed ahead of a forecast copy.
//
// In a training loop's step, a copy's first CUDA calls are slow. A GPU->CPU step spent 61-76 us
// in its calls after the walk (the gather's launch, the DMA, the event) against 13-19 us back to
// back, and under Nsight Systems the gather's launch took 40.5 us after an idle gap against
// 17.2 us back to back (1 x H200, 2026-11-29). Neither the stream nor the launch's parameters
// made the difference (results/NOTES.md): the calls find the driver's code and state out of the
// caches, evicted during the caller's gap by its own work or by the host's other tenants.
//
// The first worker of a device's pool that wakes ahead of a forecast copy (worker_pool.h) makes
// the calls such a copy makes, on a stream of the engine's own and with nothing for the device
// to wait on: a launch of an empty kernel, a 16-byte DMA each way between pinned memory and the
// device, an event record. The copy then finds them in the shared cache. The calls (not timed on
// their own) run at the start of the forecast's window, 200 us before the copy is due at the
// earliest. None of them allocates, so a warm-up cannot fall into another thread's CUDA graph
// capture, which a device allocation would invalidate: the stream, the event and the buffers are
// made by the first copy that used the device, on its thread, beside that copy's own first
// allocations (prepare). A device's pool
// also serves the copies to the CPU of threads whose current device it is (worker_pool_set.h),
// usually copies from that device; pools of no device, and the one pool that MTC_WORKER_THREADS
// makes for every device, warm nothing.
//
// Measured against the same engine without it (BM_EngineCopy, 1 x H200 hosts, 2026-11-29;
// docs/engine-copies-after-a-gap.md): seven of eight training steps 4-10 % shorter, the calls after
// a GPU->CPU walk 5-20 us shorter, still slower than back to back.
//
// On by default. MTC_DRIVER_WARMUP=0 turns it off for a process (read with the worker pools'
// other settings, worker_pool_set.h), set_enabled() for benchmarks that compare the two in one
// process (BM_EngineCopy bit 4194304). Off at exit.
#pragma once

#include <c10/core/Device.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace mtc::detail::driver_warmup {

// Makes what `device`'s warm-ups use, once: later calls, and calls after a failed try, return
// at once. Every copy calls it for the devices it used, once its own work is done
// (CopyJob::run_routes), so a process whose copies never touch a device makes nothing there, nor
// a CUDA context. Never throws: what cannot be made leaves the device unwarmed. Does nothing while
// turned off, or for an index that is no device's.
void prepare(c10::DeviceIndex device) noexcept;

// For tests: whether prepare() made `device`'s resources; forget that it tried, so that the next
// copy prepares the device again (what was made is leaked: a worker may be warming with it).
bool prepared(c10::DeviceIndex device);
void forget(c10::DeviceIndex device);

// Makes the calls above for `device`, if prepare() made its stream. Never throws: a call that
// fails is dropped and its error cleared (the copy that follows reports its own). Does nothing
// while turned off.
void warm(c10::DeviceIndex device) noexcept;

// Warm-ups made since the process started (for tests).
int64_t warmups_made();

// Process-wide. set_enabled() wins over the environment, read later or earlier;
// enable_from_environment() takes effect only if nothing set it before.
void set_enabled(bool on);
void enable_from_environment(bool on);
bool enabled();

// Launches a kernel of one thread that does nothing on `stream` (driver_warmup.cu); returns the
// launch's status.
cudaError_t launch_empty_kernel(cudaStream_t stream);

}  // namespace mtc::detail::driver_warmup
