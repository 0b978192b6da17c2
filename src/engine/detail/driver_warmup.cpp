#include "detail/driver_warmup.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>

#include "detail/cuda_check.h"
#include "mtc/nvtx.h"

namespace mtc::detail::driver_warmup {
namespace {

// -1 until the worker pools read MTC_DRIVER_WARMUP (enable_from_environment) or set_enabled()
// was called: on, the default.
std::atomic<int> g_enabled{-1};

// What one device's warm-ups use, made once and kept for the process's life.
struct DeviceWarmup {
  cudaStream_t stream = nullptr;  // non-blocking: orders nothing against the caller's streams
  cudaEvent_t event = nullptr;
  std::byte* pinned = nullptr;  // kBytes out, kBytes back
  std::byte* device = nullptr;
};

// As small as a DMA gets; the copies' own DMAs are larger, but take the same calls.
constexpr size_t kBytes = 16;
// Within torch's small-block pool, as a copy's gather buffer and staging blocks usually are.
constexpr size_t kAllocationBytes = 512;
constexpr size_t kMaxDevices = 128;  // c10::DeviceIndex is 8 bits

std::mutex g_make_mutex;
std::array<std::atomic<DeviceWarmup*>, kMaxDevices> g_devices{};

// Null when any part could not be made (the part made is kept: at most one stream and a few
// bytes, and a later call does not try again).
DeviceWarmup* warmup_of(c10::DeviceIndex device) {
  auto& slot = g_devices[static_cast<size_t>(device)];
  if (DeviceWarmup* made = slot.load(std::memory_order_acquire)) return made;
  static std::array<bool, kMaxDevices> failed{};
  std::lock_guard<std::mutex> lock(g_make_mutex);
  if (DeviceWarmup* made = slot.load(std::memory_order_relaxed)) return made;
  if (failed[static_cast<size_t>(device)]) return nullptr;
  auto* w = new DeviceWarmup;
  cudaError_t status = cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking);
  if (status == cudaSuccess) status = cudaEventCreateWithFlags(&w->event, cudaEventDisableTiming);
  if (status == cudaSuccess)
    status = cudaMallocHost(reinterpret_cast<void**>(&w->pinned), 2 * kBytes);
  if (status == cudaSuccess) status = cudaMalloc(reinterpret_cast<void**>(&w->device), kBytes);
  if (status != cudaSuccess) {
    clear_cuda_error(status);
    failed[static_cast<size_t>(device)] = true;
    return nullptr;  // `w` leaks what it holds: see above
  }
  slot.store(w, std::memory_order_release);
  return w;
}

}  // namespace

void set_enabled(bool on) { g_enabled.store(on ? 1 : 0); }

void enable_from_environment(bool on) {
  int unset = -1;
  g_enabled.compare_exchange_strong(unset, on ? 1 : 0);
}

bool enabled() { return g_enabled.load(std::memory_order_relaxed) != 0; }

void warm(c10::DeviceIndex device) noexcept {
  // device_count() is cached by torch after its first call (0 without a GPU).
  if (!enabled() || device < 0 || device >= c10::cuda::device_count()) return;
  MTC_RANGE(warm_range, "warm driver");
  try {
    const c10::cuda::CUDAGuard guard(device);
    DeviceWarmup* w = warmup_of(device);
    if (w == nullptr) return;
    {
      // The caching allocator takes the current stream's pool: ours, so the block is reused by
      // no copy of the caller's.
      const c10::cuda::CUDAStreamGuard stream_guard(
          c10::cuda::getStreamFromExternal(w->stream, device));
      c10::DataPtr block = c10::cuda::CUDACachingAllocator::get()->allocate(kAllocationBytes);
    }
    // No MTC_CUDA_CHECK: its fault injection would take a fault meant for a copy's call.
    clear_cuda_error(launch_empty_kernel(w->stream));
    clear_cuda_error(
        cudaMemcpyAsync(w->device, w->pinned, kBytes, cudaMemcpyHostToDevice, w->stream));
    clear_cuda_error(
        cudaMemcpyAsync(w->pinned + kBytes, w->device, kBytes, cudaMemcpyDeviceToHost, w->stream));
    clear_cuda_error(cudaEventRecord(w->event, w->stream));
  } catch (...) {
    // Out of memory in the allocator, say: the copy that follows will say so itself.
  }
}

}  // namespace mtc::detail::driver_warmup
