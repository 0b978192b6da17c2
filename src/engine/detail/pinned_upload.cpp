#include "detail/pinned_upload.h"

#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "detail/cuda_check.h"
#include "detail/event_pool.h"
#include "detail/pinned_pool_set.h"
#include "detail/round_up.h"
#include "detail/worker_pool_set.h"
#include "mtc/nvtx.h"

namespace mtc::detail {
namespace {

std::atomic<int> upload_thread_limit{0};
std::atomic<int64_t> upload_slot_bytes_setting{0};
std::atomic<int> upload_slots_setting{0};

// As many slots of as many bytes as the pinned pool's limit allows: first fewer slots (down to
// two, which still overlap a fill with a DMA), then smaller ones, then a single one.
PinnedBlock acquire_ring(PinnedPool& pool, int& slots, int64_t& slot_bytes) {
  while (true) {
    if (slots == 1 && slot_bytes <= kUploadMinSlotBytes) return pool.acquire(slot_bytes);
    if (PinnedBlock ring = pool.try_acquire(slots * slot_bytes)) return ring;
    if (slots > 2) {
      slots /= 2;
    } else if (slot_bytes > kUploadMinSlotBytes) {
      slot_bytes = std::max(kUploadMinSlotBytes, slot_bytes / 2);
    } else {
      slots = 1;
    }
  }
}

// One upload's state, shared by the threads that fill its chunks. A pool worker may wake after
// the last chunk was taken and the caller has left: such a helper touches only this object.
class Upload {
 public:
  Upload(std::vector<HostToDeviceSpan> chunks, std::byte* ring, int slots, int64_t slot_bytes,
         c10::DeviceIndex device, cudaStream_t stream)
      : chunks_(std::move(chunks)),
        ring_(ring),
        slots_(slots),
        slot_bytes_(slot_bytes),
        device_(device),
        stream_(stream),
        submitted_(std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(slots))),
        events_(static_cast<size_t>(slots), nullptr) {
    for (int s = 0; s < slots; ++s) submitted_[s].store(-1, std::memory_order_relaxed);
  }
  Upload(const Upload&) = delete;  // shared through shared_ptr only
  Upload& operator=(const Upload&) = delete;

  // On the upload's own thread (whose device is current), before any helper joins.
  void create_events() {
    for (cudaEvent_t& e : events_) e = EventPool::instance().acquire(device_);
  }
  void release_events() noexcept {
    // The copy's completion event, recorded after every chunk's DMA, covers the ring from here.
    for (cudaEvent_t& e : events_) {
      if (e != nullptr) EventPool::instance().release(device_, e);
      e = nullptr;
    }
  }

  // A thread's share: chunks in turn until none is left or a thread failed.
  void join() {
    active_.fetch_add(1);
    try {
      if (next_.load(std::memory_order_relaxed) < size()) {
        const c10::cuda::CUDAGuard guard(device_);
        for (int64_t i;
             !failed_.load(std::memory_order_relaxed) && (i = next_.fetch_add(1)) < size();)
          move(i);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
    active_.fetch_sub(1, std::memory_order_release);
  }

  // On the upload's own thread once its share is done: waits for the helpers still filling and
  // rethrows the first failure.
  void finish() {
    close();
    if (error_) std::rethrow_exception(error_);
  }

  // No chunk is handed out after this; returns once no thread is filling one. Before the events
  // go back: a helper that joins later finds nothing to do.
  void close() noexcept {
    next_.fetch_add(size());
    while (active_.load(std::memory_order_acquire) != 0) cpu_relax();
  }

 private:
  int64_t size() const { return static_cast<int64_t>(chunks_.size()); }

  void move(int64_t i) {
    const HostToDeviceSpan& chunk = chunks_[static_cast<size_t>(i)];
    const auto slot = static_cast<size_t>(i % slots_);
    std::byte* staging = ring_ + static_cast<int64_t>(slot) * slot_bytes_;
    if (i >= slots_) {
      // The slot's previous chunk was taken before this one; wait until its DMA is queued
      // (by whichever thread took it), then until that DMA has run.
      while (submitted_[slot].load(std::memory_order_acquire) != i - slots_) {
        if (failed_.load(std::memory_order_relaxed)) return;
        cpu_relax();
      }
      MTC_CUDA_CHECK(cudaEventSynchronize(events_[slot]));
    }
    std::memcpy(staging, chunk.src, static_cast<size_t>(chunk.bytes));
    MTC_CUDA_CHECK(cudaMemcpyAsync(chunk.dst, staging, static_cast<size_t>(chunk.bytes),
                                   cudaMemcpyHostToDevice, stream_));
    MTC_CUDA_CHECK(cudaEventRecord(events_[slot], stream_));
    submitted_[slot].store(i, std::memory_order_release);
  }

  const std::vector<HostToDeviceSpan> chunks_;
  std::byte* const ring_;
  const int slots_;
  const int64_t slot_bytes_;
  const c10::DeviceIndex device_;
  const cudaStream_t stream_;
  // By slot: the last chunk whose DMA (and the slot's event after it) is queued; -1: none yet.
  const std::unique_ptr<std::atomic<int64_t>[]> submitted_;
  std::vector<cudaEvent_t> events_;
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_{0};  // threads between joining and being done
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace

void set_upload_threads(int threads) { upload_thread_limit.store(std::max(0, threads)); }
int upload_threads() { return upload_thread_limit.load(std::memory_order_relaxed); }

void set_upload_ring(int64_t slot_bytes, int slots) {
  upload_slot_bytes_setting.store(
      slot_bytes <= 0
          ? 0
          : round_up(std::max(slot_bytes, kUploadMinSlotBytes), PinnedPool::kGranularity));
  upload_slots_setting.store(std::max(0, slots));
}
int64_t upload_slot_bytes() {
  const int64_t set = upload_slot_bytes_setting.load(std::memory_order_relaxed);
  return set > 0 ? set : kUploadChunkBytes;
}
int upload_slots() {
  const int set = upload_slots_setting.load(std::memory_order_relaxed);
  return set > 0 ? set : kUploadSlots;
}

int64_t upload_pageable(std::span<const HostToDeviceSpan> spans, Completion& completion,
                        c10::DeviceIndex device, cudaStream_t stream) {
  MTC_RANGE(upload, "upload");
  int64_t total = 0;
  int64_t largest = 0;
  for (const HostToDeviceSpan& s : spans) {
    total += s.bytes;
    largest = std::max(largest, s.bytes);
  }
  if (total == 0) return 0;
  int64_t slot_bytes = round_up(std::min(upload_slot_bytes(), largest), PinnedPool::kGranularity);
  int64_t chunk_count = 0;
  for (const HostToDeviceSpan& s : spans) chunk_count += (s.bytes + slot_bytes - 1) / slot_bytes;
  int slots = static_cast<int>(std::min<int64_t>(upload_slots(), chunk_count));
  const PinnedBlock ring =
      acquire_ring(PinnedPoolSet::instance().for_device(device), slots, slot_bytes);
  completion.hold(ring);

  std::vector<HostToDeviceSpan> chunks;
  for (const HostToDeviceSpan& s : spans) {
    for (int64_t done = 0; done < s.bytes; done += slot_bytes)
      chunks.push_back({s.dst + done, s.src + done, std::min(slot_bytes, s.bytes - done)});
  }
  WorkerPool& pool = current_worker_pool();
  const int limit = upload_threads() > 0 ? upload_threads() : pool.size() + 1;
  const int64_t helpers =
      total < kUploadParallelBytes
          ? 0
          : std::min<int64_t>({limit - 1, pool.size(), static_cast<int64_t>(chunks.size()) - 1});

  const auto upload =
      std::make_shared<Upload>(std::move(chunks), ring.data, slots, slot_bytes, device, stream);
  try {
    upload->create_events();
    pool.submit_copies([upload] { upload->join(); }, static_cast<int>(helpers));
    upload->join();
    upload->finish();
  } catch (...) {
    // Helpers queued before a failure (say, in submit_copies) may be filling: done first.
    upload->close();
    upload->release_events();
    throw;
  }
  upload->release_events();
  return ring.bytes;
}

}  // namespace mtc::detail
