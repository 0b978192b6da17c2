#include "detail/driver_warmup.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <mutex>

#include "detail/cuda_check.h"
#include "detail/process_switch.h"
#include "mtc/nvtx.h"

namespace mtc::detail::driver_warmup {
namespace {

ProcessSwitch g_enabled;  // MTC_DRIVER_WARMUP
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
// By device: whether prepare() tried to make its resources (g_devices then holds them or not).
std::array<std::atomic<bool>, kMaxDevices> g_tried{};

bool is_device(c10::DeviceIndex device) {
  // device_count() is cached by torch after its first call (0 without a GPU).
  return device >= 0 && device < c10::cuda::device_count();
}

}  // namespace

void set_enabled(bool on) { g_enabled.set(on); }

void enable_from_environment(bool on) { g_enabled.set_from_environment(on); }

bool enabled() { return g_enabled.on(); }

int64_t warmups_made() { return g_made.load(); }

bool prepared(c10::DeviceIndex device) {
  return is_device(device) &&
         g_devices[static_cast<size_t>(device)].load(std::memory_order_acquire) != nullptr;
}

void forget(c10::DeviceIndex device) {
  if (!is_device(device)) return;
  g_devices[static_cast<size_t>(device)].store(nullptr, std::memory_order_release);
  g_tried[static_cast<size_t>(device)].store(false, std::memory_order_release);
}

void prepare(c10::DeviceIndex device) noexcept {
  // Off (MTC_DRIVER_WARMUP=0), nothing is made; a copy after it is turned on makes it.
  if (!enabled() || !is_device(device)) return;
  // Every copy to or from the device calls this: after the first, one load and out.
  std::atomic<bool>& tried = g_tried[static_cast<size_t>(device)];
  if (tried.load(std::memory_order_acquire)) return;
  try {
    // Copies on several threads may come here at once: one of them tries, once per device (a
    // failed try is not retried by every later copy).
    static std::mutex trying;
    const std::lock_guard<std::mutex> lock(trying);
    if (tried.load(std::memory_order_relaxed)) return;
    tried.store(true, std::memory_order_release);
    // Once per process: the runtime may be unloading at exit, and a warm-up would only fail there.
    static const bool off_at_exit = std::atexit([] { set_enabled(false); }) == 0;
    (void)off_at_exit;
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
    g_devices[static_cast<size_t>(device)].store(w, std::memory_order_release);
  } catch (...) {
    // The guard could not switch to the device, or no memory: not warmed either.
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
