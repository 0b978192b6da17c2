#include "detail/pinned_upload.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "detail/cuda_check.h"
#include "detail/event_pool.h"
#include "detail/pinned_pool_set.h"
#include "detail/round_up.h"
#include "detail/worker_pool_set.h"
#include "mtc/nvtx.h"

namespace mtc::detail {
namespace {

// The upload's own thread fills its chunks in pieces of this size when it queues every DMA, and
// queues those that others filled in between: a piece takes ~30 us at one thread's fill rate.
constexpr int64_t kQueuerPieceBytes = 256 << 10;

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

// With one queuer, the part of a chunk a fill thread takes at a time.
struct Piece {
  int64_t chunk;
  int64_t offset;
  int64_t bytes;
};

std::vector<Piece> cut_into_pieces(const std::vector<HostToDeviceSpan>& chunks,
                                   int64_t piece_bytes) {
  std::vector<Piece> pieces;
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (int64_t done = 0; done < chunks[c].bytes; done += piece_bytes)
      pieces.push_back(
          {static_cast<int64_t>(c), done, std::min(piece_bytes, chunks[c].bytes - done)});
  }
  return pieces;
}

// One upload's state, shared by the threads that fill its chunks. A pool worker may wake after
// the last chunk was taken and the caller has left: such a helper touches only this object.
//
// Two ways to share the driver's calls (set_upload_one_queuer):
// - each thread queues the DMA of the chunk it filled, after waiting for its slot's event;
// - the upload's own thread alone queues every DMA, in chunk order, and learns from the slots'
//   events which slots are free again; the others only fill, and wait on a counter for a free
//   slot. Five threads that call the driver at once wait on its locks. The fill threads take
//   pieces of chunks, in order, so that they fill the oldest chunks together.
class Upload {
 public:
  Upload(std::vector<HostToDeviceSpan> chunks, std::byte* ring, int slots, int64_t slot_bytes,
         c10::DeviceIndex device, cudaStream_t stream, bool one_queuer, int64_t piece_bytes)
      : chunks_(std::move(chunks)),
        pieces_(one_queuer ? cut_into_pieces(chunks_, piece_bytes) : std::vector<Piece>()),
        ring_(ring),
        slots_(slots),
        slot_bytes_(slot_bytes),
        device_(device),
        stream_(stream),
        one_queuer_(one_queuer),
        done_(std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(slots))),
        unfilled_(std::make_unique<std::atomic<int64_t>[]>(chunks_.size())),
        events_(static_cast<size_t>(slots), nullptr) {
    for (int s = 0; s < slots; ++s) done_[s].store(-1, std::memory_order_relaxed);
    for (size_t c = 0; c < chunks_.size(); ++c) unfilled_[c].store(0, std::memory_order_relaxed);
    for (const Piece& p : pieces_) unfilled_[static_cast<size_t>(p.chunk)].fetch_add(1);
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

  // A helper's share: chunks in turn until none is left or a thread failed.
  void join() {
    guarded([this] {
      if (next_.load(std::memory_order_relaxed) >= items()) return;
      if (one_queuer_) {
        for (int64_t p; !failed() && (p = next_.fetch_add(1)) < items();) fill(p);
        return;
      }
      const c10::cuda::CUDAGuard guard(device_);
      for (int64_t i; !failed() && (i = next_.fetch_add(1)) < size();) fill_and_queue(i);
    });
  }

  // The upload's own share, once the helpers are asked for; then waits for the helpers still
  // filling and rethrows the first failure.
  void run_and_finish() {
    if (one_queuer_) {
      guarded([this] { queue_all(); });
    } else {
      join();
    }
    close();
    if (error_) std::rethrow_exception(error_);
  }

  // No chunk is handed out after this; returns once no thread is filling one. Before the events
  // go back: a helper that joins later finds nothing to do.
  void close() noexcept {
    next_.fetch_add(items());
    while (active_.load(std::memory_order_acquire) != 0) cpu_relax();
  }
  // close() after a failure outside the upload's threads: a helper that waits for a slot, which
  // no thread will free now, gives up.
  void abandon() noexcept {
    failed_.store(true, std::memory_order_relaxed);
    close();
  }

 private:
  int64_t size() const { return static_cast<int64_t>(chunks_.size()); }
  // What next_ hands out: pieces with one queuer, chunks otherwise.
  int64_t items() const { return one_queuer_ ? static_cast<int64_t>(pieces_.size()) : size(); }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  size_t slot_of(int64_t i) const { return static_cast<size_t>(i % slots_); }
  std::byte* staging(int64_t i) const {
    return ring_ + static_cast<int64_t>(slot_of(i)) * slot_bytes_;
  }

  template <typename Work>
  void guarded(Work work) {
    active_.fetch_add(1);
    try {
      work();
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
    active_.fetch_sub(1, std::memory_order_release);
  }

  void queue_dma(int64_t i) {
    const HostToDeviceSpan& chunk = chunks_[static_cast<size_t>(i)];
    MTC_CUDA_CHECK(cudaMemcpyAsync(chunk.dst, staging(i), static_cast<size_t>(chunk.bytes),
                                   cudaMemcpyHostToDevice, stream_));
    MTC_CUDA_CHECK(cudaEventRecord(events_[slot_of(i)], stream_));
  }

  // Each thread queues its own: done_[slot] is the last chunk whose DMA (and the slot's event
  // after it) is queued; -1: none yet.
  void fill_and_queue(int64_t i) {
    const size_t slot = slot_of(i);
    if (i >= slots_) {
      // The slot's previous chunk was taken before this one; wait until its DMA is queued
      // (by whichever thread took it), then until that DMA has run.
      while (done_[slot].load(std::memory_order_acquire) != i - slots_) {
        if (failed()) return;
        cpu_relax();
      }
      MTC_CUDA_CHECK(cudaEventSynchronize(events_[slot]));
    }
    const HostToDeviceSpan& chunk = chunks_[static_cast<size_t>(i)];
    std::memcpy(staging(i), chunk.src, static_cast<size_t>(chunk.bytes));
    queue_dma(i);
    done_[slot].store(i, std::memory_order_release);
  }

  // One thread queues them all: unfilled_[chunk] counts the chunk's pieces not yet filled;
  // freed_ counts the chunks whose DMA has run (their slots take the chunk `slots_` later).
  bool slot_free(int64_t i) const {
    return i < slots_ || freed_.load(std::memory_order_acquire) > i - slots_;
  }
  void copy_piece(const Piece& piece, int64_t offset, int64_t bytes) {
    std::memcpy(staging(piece.chunk) + offset,
                chunks_[static_cast<size_t>(piece.chunk)].src + offset, static_cast<size_t>(bytes));
  }
  void piece_filled(const Piece& piece) {
    unfilled_[static_cast<size_t>(piece.chunk)].fetch_sub(1, std::memory_order_acq_rel);
  }
  void fill(int64_t p) {
    const Piece& piece = pieces_[static_cast<size_t>(p)];
    while (!slot_free(piece.chunk)) {
      if (failed()) return;
      cpu_relax();
    }
    copy_piece(piece, piece.offset, piece.bytes);
    piece_filled(piece);
  }

  // Queues the DMAs of the chunks filled next in order, and counts those whose DMA has run.
  void pump() {
    while (queued_ < size() &&
           unfilled_[static_cast<size_t>(queued_)].load(std::memory_order_acquire) == 0)
      queue_dma(queued_++);
    for (int64_t freed = freed_.load(std::memory_order_relaxed); freed < queued_; ++freed) {
      bool done = false;
      MTC_CUDA_CHECK(cuda_event_query(events_[slot_of(freed)], done));
      if (!done) break;
      freed_.store(freed + 1, std::memory_order_release);
    }
  }

  // The upload's own thread: queues every chunk's DMA and, while it has none to queue, fills
  // the next chunk whose slot is free, in pieces, queuing between them.
  void queue_all() {
    const c10::cuda::CUDAGuard guard(device_);
    while (queued_ < size()) {
      pump();
      if (failed()) return;
      int64_t p = next_.load(std::memory_order_relaxed);
      if (p < items() && slot_free(pieces_[static_cast<size_t>(p)].chunk) &&
          next_.compare_exchange_strong(p, p + 1)) {
        const Piece& piece = pieces_[static_cast<size_t>(p)];
        for (int64_t done = 0; done < piece.bytes; done += kQueuerPieceBytes) {
          copy_piece(piece, piece.offset + done, std::min(kQueuerPieceBytes, piece.bytes - done));
          pump();
        }
        piece_filled(piece);
        continue;
      }
      cpu_relax();
    }
  }

  const std::vector<HostToDeviceSpan> chunks_;
  const std::vector<Piece> pieces_;  // one queuer only
  std::byte* const ring_;
  const int slots_;
  const int64_t slot_bytes_;
  const c10::DeviceIndex device_;
  const cudaStream_t stream_;
  const bool one_queuer_;
  const std::unique_ptr<std::atomic<int64_t>[]> done_;      // by slot, each thread queuing
  const std::unique_ptr<std::atomic<int64_t>[]> unfilled_;  // by chunk, one queuer
  std::vector<cudaEvent_t> events_;
  std::atomic<int64_t> next_{0};   // the next piece (one queuer) or chunk to fill
  std::atomic<int64_t> freed_{0};  // one queuer only
  int64_t queued_ = 0;             // one queuer only, its thread alone
  std::atomic<int> active_{0};     // threads between joining and being done
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// Threads that only fill chunks of large uploads with one queuer, beside the copy's worker pool:
// a few pool workers fill pageable memory at well under the link's bandwidth (about 9 GB/s each
// on an H200 host, where nine threads fill at 68 GB/s). As many as the hardware threads left to
// this process's share of the device, up to kUploadCrewMax; made on first use, and they sleep
// when idle: waking them costs tens of microseconds, small beside an upload of kUploadCrewBytes.
std::atomic<int> crew_threads{0};
std::atomic<int64_t> crew_tasks{0};

WorkerPool* upload_crew(const WorkerPool& pool) {
  static WorkerPool* const crew = [&pool]() -> WorkerPool* {
    const int hardware = static_cast<int>(std::thread::hardware_concurrency());
    const int devices = std::max<int>(c10::cuda::device_count(), 1);
    const int spare = hardware / devices - pool.size() - 1;
    const int size = std::clamp(spare, 0, kUploadCrewMax);
    crew_threads.store(size);
    return size > 0 ? new WorkerPool(size, std::chrono::microseconds(0), /*anticipate=*/false)
                    : nullptr;
  }();
  return crew;
}

}  // namespace

int upload_crew_threads() { return crew_threads.load(std::memory_order_relaxed); }
int64_t upload_crew_tasks() { return crew_tasks.load(std::memory_order_relaxed); }

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
  const bool one_queuer = upload_one_queuer();
  // The pieces threads take at a time (each queuing: whole chunks).
  const int64_t piece_bytes = one_queuer ? std::min(upload_piece_bytes(), slot_bytes) : slot_bytes;
  int64_t items = 0;
  for (const HostToDeviceSpan& c : chunks) items += (c.bytes + piece_bytes - 1) / piece_bytes;
  WorkerPool& pool = current_worker_pool();
  const int limit = upload_threads() > 0 ? upload_threads() : pool.size() + 1;
  const int64_t helpers =
      total < kUploadParallelBytes ? 0 : std::min<int64_t>({limit - 1, pool.size(), items - 1});

  // A thread limit set for a benchmark holds the crew too; the default (every thread) does not.
  const int64_t crew_room = upload_threads() > 0 ? limit - 1 - helpers : kUploadCrewMax;
  // The crew joins only where nobody but the upload's own thread calls the driver.
  const int crew_limit = upload_crew_limit() < 0 ? kUploadCrewMax : upload_crew_limit();
  WorkerPool* crew = one_queuer && crew_limit > 0 && total >= kUploadCrewBytes && helpers > 0
                         ? upload_crew(pool)
                         : nullptr;
  const int64_t crew_helpers =
      crew == nullptr
          ? 0
          : std::min<int64_t>({crew_limit, crew->size(), crew_room, items - 1 - helpers});

  const auto upload = std::make_shared<Upload>(std::move(chunks), ring.data, slots, slot_bytes,
                                               device, stream, one_queuer, piece_bytes);
  try {
    upload->create_events();
    pool.submit_copies([upload] { upload->join(); }, static_cast<int>(helpers));
    if (crew_helpers > 0) {
      crew->submit_copies([upload] { upload->join(); }, static_cast<int>(crew_helpers));
      crew_tasks.fetch_add(crew_helpers, std::memory_order_relaxed);
    }
    upload->run_and_finish();
  } catch (...) {
    // Helpers queued before a failure (say, in submit_copies) may be filling: done first.
    upload->abandon();
    upload->release_events();
    throw;
  }
  upload->release_events();
  return ring.bytes;
}

}  // namespace mtc::detail
