#include "detail/staging.h"

#include <algorithm>
#include <cstring>

#include "detail/cuda_check.h"
#include "detail/event_pool.h"
#include "detail/pinned_pool_set.h"
#include "detail/prefetch.h"
#include "detail/worker_pool_set.h"
#include "mtc/nvtx.h"

namespace mtc::detail {

void run_host_copies(std::span<const HostCopy> copies) {
  int64_t total = 0;
  for (const HostCopy& c : copies) total += c.bytes;
  WorkerPool& pool = current_worker_pool();
  if (total < kParallelFillBytes || pool.size() == 0) {
    for (const HostCopy& c : copies) std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
    return;
  }
  const int64_t parts = std::min<int64_t>(pool.size() + 1, total / (kParallelFillBytes / 4));
  const int64_t step = (total + parts - 1) / parts;
  // Part p copies bytes [p * step, (p + 1) * step) of the copies laid end to end.
  pool.parallel_for(parts, [&](int64_t p) {
    const int64_t begin = p * step;
    const int64_t end = std::min(total, begin + step);
    int64_t at = 0;  // where the current copy starts, laid end to end
    for (const HostCopy& c : copies) {
      const int64_t from = std::max(begin, at);
      const int64_t to = std::min(end, at + c.bytes);
      if (from < to)
        std::memcpy(c.dst + (from - at), c.src + (from - at), static_cast<size_t>(to - from));
      at += c.bytes;
      if (at >= end) break;
    }
  });
}

void fill_staging(std::span<const StagingCopy> copies, std::byte* host_base) {
  MTC_RANGE(stage, "stage");
  // Small tensors lie apart in memory, each a miss of its own after an idle gap: each copy's
  // first lines are asked for a few copies ahead (prefetch.h).
  constexpr size_t kAhead = 4;
  const bool ahead = prefetch::enabled();
  auto copy_range = [&](size_t first, size_t last) {
    if (ahead)
      for (size_t k = first; k < std::min(last, first + kAhead); ++k)
        prefetch::lines(copies[k].src, static_cast<size_t>(copies[k].bytes), 4);
    for (size_t k = first; k < last; ++k) {
      if (ahead && k + kAhead < last)
        prefetch::lines(copies[k + kAhead].src, static_cast<size_t>(copies[k + kAhead].bytes), 4);
      const StagingCopy& c = copies[k];
      std::memcpy(host_base + c.dst_offset, c.src, static_cast<size_t>(c.bytes));
    }
  };
  int64_t total = 0;
  for (const StagingCopy& c : copies) total += c.bytes;
  WorkerPool& pool = current_worker_pool();
  if (total < kParallelFillBytes || pool.size() == 0) {
    copy_range(0, copies.size());
    return;
  }
  // Split the copies into parts of about equal bytes.
  const int64_t parts = std::min<int64_t>(pool.size() + 1, total / (kParallelFillBytes / 4));
  std::vector<size_t> bounds{0};
  int64_t acc = 0;
  for (size_t k = 0; k < copies.size(); ++k) {
    acc += copies[k].bytes;
    if (acc * parts >= total * static_cast<int64_t>(bounds.size()) && k + 1 < copies.size())
      bounds.push_back(k + 1);
  }
  bounds.push_back(copies.size());
  pool.parallel_for(static_cast<int64_t>(bounds.size() - 1),
                    [&](int64_t p) { copy_range(bounds[p], bounds[p + 1]); });
}

// Reached with slots left only when the copy failed before drain(): its host copies would fill
// outputs nobody gets, and recording them could throw (std::bad_alloc) out of a destructor,
// which ends the process. The completion holds the slots' blocks and waits for their DMAs.
PinnedPipeline::~PinnedPipeline() { let_go(); }

void PinnedPipeline::let_go() noexcept {
  for (Slot& slot : slots_) {
    if (slot.event != nullptr) EventPool::instance().release(device_, slot.event);
    slot = Slot{};
  }
  current_ = -1;
  capacity_ = kSlots;
}

void PinnedPipeline::flush(Slot& slot) {
  run_host_copies(slot.pending);
  slot.pending.clear();
}

std::pair<PinnedPipeline::Slot*, int64_t> PinnedPipeline::reserve(int64_t bytes) {
  bytes = (bytes + 255) / 256 * 256;
  if (current_ >= 0 && slots_[current_].used + bytes <= kSlotBytes) {
    Slot& slot = slots_[current_];
    const int64_t offset = slot.used;
    slot.used += bytes;
    return {&slot, offset};
  }
  int next = (current_ + 1) % capacity_;
  bool fresh = false;
  if (!slots_[next].block) {
    // Slots are taken in order, so those before `next` exist: with no room for another, the
    // ring is what it has (without even one, the pool's limit error goes to the copy).
    PinnedPool& pool = PinnedPoolSet::instance().for_device(device_);
    const PinnedBlock block = next == 0 ? pool.acquire(kSlotBytes) : pool.try_acquire(kSlotBytes);
    if (block) {
      // Held from now, before any DMA lands in it: Completion::hold gives back a block it has
      // no room for, which drain(), after the DMAs, could not let it do.
      completion_.hold(block);
      slots_[next].block = block;
      slots_[next].event = EventPool::instance().acquire(device_);
      fresh = true;
    } else {
      capacity_ = next;
      next = 0;
    }
  }
  current_ = next;
  Slot& slot = slots_[current_];
  if (!fresh) {
    // Recycling: the DMA that last used this slot must be done.
    MTC_CUDA_CHECK(cudaEventSynchronize(slot.event));
    flush(slot);
  }
  slot.used = bytes;
  return {&slot, 0};
}

void PinnedPipeline::device_to_host(std::byte* dst, const std::byte* src, int64_t bytes) {
  for (int64_t done = 0; done < bytes;) {
    const int64_t n = std::min(kSlotBytes, bytes - done);
    auto [slot, offset] = reserve(n);
    MTC_CUDA_CHECK(cudaMemcpyAsync(slot->block.data + offset, src + done, static_cast<size_t>(n),
                                   cudaMemcpyDeviceToHost, stream_));
    MTC_CUDA_CHECK(cudaEventRecord(slot->event, stream_));
    slot->pending.push_back({dst + done, slot->block.data + offset, n});
    done += n;
  }
}

int64_t PinnedPipeline::pinned_bytes() const {
  int64_t bytes = 0;
  for (const Slot& slot : slots_) bytes += slot.block.bytes;
  return bytes;
}

void PinnedPipeline::drain() {
  // The completion holds the slots' blocks since reserve() took them; its event, recorded after
  // all of this stream's work, covers the slots.
  for (const Slot& slot : slots_) {
    for (const HostCopy& c : slot.pending) completion_.copy_after(c.dst, c.src, c.bytes);
  }
  let_go();
}

}  // namespace mtc::detail
