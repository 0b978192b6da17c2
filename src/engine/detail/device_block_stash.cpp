#include "detail/device_block_stash.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "detail/cuda_check.h"
#include "detail/round_up.h"

namespace mtc::detail::device_block_stash {
namespace {

std::atomic<bool> stash_on{true};
std::atomic<uint64_t> blocks_taken{0};

struct KeptBlock {
  c10::DataPtr data;
  size_t bytes;
};

// One device's blocks, the stream they were allocated on, and the requests since the last refill.
struct DeviceStash {
  std::mutex mutex;
  std::optional<c10::Stream> stream;
  std::vector<KeptBlock> blocks;
  std::vector<size_t> requests;
};

constexpr size_t kDevices = 64;

// Never destroyed: blocks freed during the process's exit could outlive torch's allocator.
std::array<DeviceStash, kDevices>& stashes() {
  static auto* all = new std::array<DeviceStash, kDevices>();
  return *all;
}

DeviceStash* stash_of(c10::DeviceIndex device) {
  if (device < 0 || static_cast<size_t>(device) >= kDevices) return nullptr;
  return &stashes()[static_cast<size_t>(device)];
}

// A block's size for a request: room for a slightly larger chunk next time.
size_t block_bytes(size_t request) {
  return static_cast<size_t>(round_up(static_cast<int64_t>(request + request / 4), 4096));
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    clear_cuda_error(cudaGetLastError());
    return true;  // unknown: keep nothing
  }
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace

c10::DataPtr take(const c10::cuda::CUDAStream& stream, size_t bytes) {
  DeviceStash* stash = stash_of(stream.device_index());
  if (stash == nullptr || !stash_on.load(std::memory_order_relaxed)) return {};
  const std::lock_guard<std::mutex> lock(stash->mutex);
  // The latest requests: those of the copies just made, not of older ones on other streams or run
  // by their callers.
  if (stash->requests.size() == kMaxBlocks) stash->requests.erase(stash->requests.begin());
  stash->requests.push_back(bytes);
  if (stash->stream != stream.unwrap()) return {};
  auto best = stash->blocks.end();
  for (auto it = stash->blocks.begin(); it != stash->blocks.end(); ++it) {
    if (it->bytes >= bytes && (best == stash->blocks.end() || it->bytes < best->bytes)) best = it;
  }
  if (best == stash->blocks.end()) return {};
  c10::DataPtr data = std::move(best->data);
  stash->blocks.erase(best);
  blocks_taken.fetch_add(1, std::memory_order_relaxed);
  return data;
}

void refill(const c10::cuda::CUDAStream& stream) noexcept {
  DeviceStash* stash = stash_of(stream.device_index());
  if (stash == nullptr) return;
  // Once per process: the CUDA runtime may be unloading at exit, where a refill would only fail.
  // What is kept then stays (freeing it could outlive torch's allocator).
  static const bool off_at_exit =
      std::atexit([] { stash_on.store(false, std::memory_order_relaxed); }) == 0;
  (void)off_at_exit;
  std::vector<KeptBlock> replaced;  // freed after the lock is let go
  try {
    std::vector<size_t> sizes;  // the requests, then the blocks' sizes for them
    {
      const std::lock_guard<std::mutex> lock(stash->mutex);
      sizes.swap(stash->requests);
      if (!stash_on.load(std::memory_order_relaxed)) {
        replaced.swap(stash->blocks);
        stash->stream.reset();
        return;
      }
    }
    std::ranges::transform(sizes, sizes.begin(), block_bytes);
    std::erase_if(sizes, [](size_t bytes) { return bytes > kMaxBlockBytes; });
    if (sizes.empty()) return;
    // Allocated outside the lock (a copy may take a block meanwhile), on the copy's stream; the
    // guard also makes a legacy default stream's null handle mean its own device's.
    const c10::cuda::CUDAStreamGuard guard(stream);
    // In thread-local capture mode: this runs after get() may have returned, and a capture the
    // program began then in global mode (torch.cuda.graph's default) on another thread would be
    // invalidated by an allocation that takes new memory from the driver. This thread captures
    // nothing, and the blocks are no part of any capture.
    const c10::cuda::CUDAStreamCaptureModeGuard capture_mode(cudaStreamCaptureModeThreadLocal);
    if (capturing(stream.stream())) return;
    std::vector<KeptBlock> fresh;
    fresh.reserve(sizes.size());
    for (const size_t bytes : sizes)
      fresh.push_back({c10::cuda::CUDACachingAllocator::get()->allocate(bytes), bytes});
    const std::lock_guard<std::mutex> lock(stash->mutex);
    replaced.swap(stash->blocks);
    if (!stash_on.load(std::memory_order_relaxed)) {
      // Turned off while allocating: nothing may stay kept.
      std::move(fresh.begin(), fresh.end(), std::back_inserter(replaced));
      stash->stream.reset();
      return;
    }
    stash->blocks = std::move(fresh);
    stash->stream = stream.unwrap();
  } catch (...) {
    clear_cuda_error(cudaGetLastError());
  }
}

KeptMemory kept(c10::DeviceIndex device) {
  DeviceStash* stash = stash_of(device);
  if (stash == nullptr) return {};
  const std::lock_guard<std::mutex> lock(stash->mutex);
  KeptMemory memory{stash->blocks.size(), 0};
  for (const KeptBlock& block : stash->blocks) memory.bytes += static_cast<int64_t>(block.bytes);
  return memory;
}

void set_enabled(bool on) {
  stash_on.store(on, std::memory_order_relaxed);
  if (on) return;
  for (DeviceStash& stash : stashes()) {
    std::vector<KeptBlock> kept;  // freed after the lock is let go
    const std::lock_guard<std::mutex> lock(stash.mutex);
    kept.swap(stash.blocks);
    stash.stream.reset();
    stash.requests.clear();
  }
}

bool enabled() { return stash_on.load(std::memory_order_relaxed); }

uint64_t taken_total() { return blocks_taken.load(std::memory_order_relaxed); }

}  // namespace mtc::detail::device_block_stash
