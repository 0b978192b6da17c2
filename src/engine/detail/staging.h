// Host-side staging helpers shared by the routes: filling packed buffers (in parallel when the
// bytes justify waking helpers) and moving large device tensors to the host through a ring of
// pinned slots, so the host copy out of one slot overlaps the DMAs into the others. (Large host
// tensors go to a device through pinned_upload.h.)
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "detail/completion.h"

namespace mtc::detail {

// Below this many bytes a fill runs on one thread: waking helpers costs more than it saves.
inline constexpr int64_t kParallelFillBytes = 1 << 20;

// Runs the copies, split by bytes across the worker pool when they add up to kParallelFillBytes
// or more (a part may cover the end of one copy and the start of the next).
void run_host_copies(std::span<const HostCopy> copies);

// One host copy into a staging buffer.
struct StagingCopy {
  const void* src;
  int64_t dst_offset;  // from the buffer's start
  int64_t bytes;
};

// Runs the copies into host_base, split across the worker pool when they add up to
// kParallelFillBytes or more.
void fill_staging(std::span<const StagingCopy> copies, std::byte* host_base);

class PinnedPipeline {
 public:
  static constexpr int64_t kSlotBytes = 4 << 20;
  // At most; fewer when the pinned pool's limit leaves no room for more (at least one).
  static constexpr int kSlots = 4;

  PinnedPipeline(Completion& completion, c10::DeviceIndex device, cudaStream_t stream)
      : completion_(completion), device_(device), stream_(stream) {}
  PinnedPipeline(const PinnedPipeline&) = delete;  // owns slots until drained
  PinnedPipeline& operator=(const PinnedPipeline&) = delete;
  ~PinnedPipeline();

  void device_to_host(std::byte* dst, const std::byte* src, int64_t bytes);
  // Hands the last host copies over to the completion (which holds the slots' blocks already).
  // A copy that succeeds must call it: the destructor drops what is left undrained.
  void drain();
  // Pinned bytes this pipeline has taken from the pool.
  int64_t pinned_bytes() const;

 private:
  struct Slot {
    PinnedBlock block;
    cudaEvent_t event = nullptr;
    int64_t used = 0;               // bytes handed out since the slot was last recycled
    std::vector<HostCopy> pending;  // slot bytes still to copy out to their outputs
  };
  // Room for `bytes` (<= kSlotBytes) in the current slot, moving on (and waiting for the
  // oldest slot's DMA) when it is full. Returns the slot and the offset inside it.
  std::pair<Slot*, int64_t> reserve(int64_t bytes);
  void flush(Slot& slot);
  // Gives the slots' events back and empties the ring; their blocks stay the completion's.
  void let_go() noexcept;

  Completion& completion_;
  c10::DeviceIndex device_;
  cudaStream_t stream_;
  std::array<Slot, kSlots> slots_{};
  int current_ = -1;
  int capacity_ = kSlots;  // slots in the ring: kSlots, or those the pool's limit allowed
};

}  // namespace mtc::detail
