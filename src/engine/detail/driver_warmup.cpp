#include "detail/driver_warmup.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>

#include "detail/cuda_check.h"
#include "mtc/nvtx.h"

namespace mtc::detail::driver_warmup {
namespace {

// -1 until the worker pools read MTC_DRIVER_WARMUP (enable_from_environment) or set_enabled()
// was called: on, the default.
std::atomic<int> g_enabled{-1};
std::atomic<int64_t> g_made{0};

// What one device's warm-ups use. Never freed: a worker may warm until the process ends.
struct DeviceWarmup {
  cudaStream_t stream = nullptr;  // non-blocking: orders nothing against the caller's streams
  cudaEvent_t event = nullptr;
  std::byte* pinned = nullptr;  // kBytes out, kBytes back
  std::byte* device = nullptr;
};

// As small as a DMA gets; the copies' own DMAs are larger, but take the same calls.
constexpr size_t kBytes = 16;
constexpr size_t kMaxDevices = 128;  // c10::DeviceIndex is 8 bits

std::array<std::atomic<DeviceWarmup*>, kMaxDevices> g_devices{};

bool is_device(c10::DeviceIndex device) {
  // device_count() is cached by torch after its first call (0 without a GPU).
  return device >= 0 && device < c10::cuda::device_count();
}

}  // namespace

void set_enabled(bool on) { g_enabled.store(on ? 1 : 0); }

void enable_from_environment(bool on) {
  int unset = -1;
  g_enabled.compare_exchange_strong(unset, on ? 1 : 0);
}

bool enabled() { return g_enabled.load(std::memory_order_relaxed) != 0; }

int64_t warmups_made() { return g_made.load(); }

void prepare(c10::DeviceIndex device) noexcept {
  if (!is_device(device)) return;
  auto& slot = g_devices[static_cast<size_t>(device)];
  if (slot.load(std::memory_order_acquire) != nullptr) return;
  // Once per process: the runtime may be unloading at exit, and a warm-up would only fail there.
  static const bool off_at_exit = std::atexit([] { set_enabled(false); }) == 0;
  (void)off_at_exit;
  try {
    const c10::cuda::CUDAGuard guard(device);
    auto* w = new DeviceWarmup;
    cudaError_t status = cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking);
    if (status == cudaSuccess) status = cudaEventCreateWithFlags(&w->event, cudaEventDisableTiming);
    if (status == cudaSuccess)
      status = cudaMallocHost(reinterpret_cast<void**>(&w->pinned), 2 * kBytes);
    if (status == cudaSuccess) status = cudaMalloc(reinterpret_cast<void**>(&w->device), kBytes);
    if (status != cudaSuccess) {
      // What was made stays (a stream and a few bytes at most): the device is not warmed.
      clear_cuda_error(status);
      return;
    }
    slot.store(w, std::memory_order_release);
  } catch (...) {
    // The guard could not switch to the device: not warmed either.
  }
}

void warm(c10::DeviceIndex device) noexcept {
  if (!enabled() || !is_device(device)) return;
  DeviceWarmup* w = g_devices[static_cast<size_t>(device)].load(std::memory_order_acquire);
  if (w == nullptr) return;
  MTC_RANGE(warm_range, "warm driver");
  try {
    const c10::cuda::CUDAGuard guard(device);
    // No MTC_CUDA_CHECK: its fault injection would take a fault meant for a copy's call.
    clear_cuda_error(launch_empty_kernel(w->stream));
    clear_cuda_error(
        cudaMemcpyAsync(w->device, w->pinned, kBytes, cudaMemcpyHostToDevice, w->stream));
    clear_cuda_error(
        cudaMemcpyAsync(w->pinned + kBytes, w->device, kBytes, cudaMemcpyDeviceToHost, w->stream));
    clear_cuda_error(cudaEventRecord(w->event, w->stream));
    g_made.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    // The guard could not switch to the device (a device fault, say): the copy will report it.
  }
}

}  // namespace mtc::detail::driver_warmup
