// The upload's job (upload_job.h): the state that the threads filling one pageable upload's
// chunks share, and how they share the ring and the driver's calls.
#include "detail/upload_job.h"

#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "detail/cuda_check.h"
#include "detail/event_pool.h"

namespace mtc::detail {
namespace {

// The upload's own thread fills its chunks in pieces of this size when it queues every DMA, and
// queues those that others filled in between: a piece takes ~30 us at one thread's fill rate.
constexpr int64_t kQueuerPieceBytes = 256 << 10;

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

// One thread's share of an upload's profile (set_upload_profiling).
struct Tally {
  int64_t pieces = 0;
  int64_t fill_ns = 0;
  int64_t wait_ns = 0;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One upload's state, shared by the threads that fill its chunks. A pool worker may wake after
// the last chunk was taken and the caller has left: such a helper touches only this object.
//
// Two ways to share the driver's calls (upload_queuing):
// - each thread queues the DMA of the chunk it filled, after waiting for its slot's event;
// - the upload's own thread alone queues every DMA, in chunk order, and learns from the slots'
//   events which slots are free again; the others only fill, and wait on a counter for a free
//   slot. Five threads that call the driver at once wait on its locks. Where the crew joins, the
//   fill threads take pieces of chunks, in order, so that they fill the oldest chunks together.
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
        profile_(upload_profiling()),
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

  // A helper's share: pieces (each thread queuing: chunks) in turn until none is left or a thread
  // failed.
  void join() {
    guarded([this] {
      Tally tally;
      const Counted counted(*this, tally);
      if (next_.load(std::memory_order_relaxed) >= items()) return;
      if (one_queuer_) {
        for (int64_t p; !failed() && (p = next_.fetch_add(1)) < items();) fill(p, tally);
        return;
      }
      const c10::cuda::CUDAGuard guard(device_);
      for (int64_t i; !failed() && (i = next_.fetch_add(1)) < size();) fill_and_queue(i, tally);
    });
  }

  // The upload's own share, once the helpers are asked for; then waits for the helpers still
  // filling and rethrows the first failure.
  void run_and_finish() {
    const int64_t start = profile_ ? now_ns() : 0;
    if (one_queuer_) {
      guarded([this] {
        Tally tally;
        const Counted counted(*this, tally);
        queue_all(tally);
      });
    } else {
      join();
    }
    close();
    if (profile_) record_profile(now_ns() - start);
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

  // Adds a thread's tally to the upload's when the thread is done (before it leaves guarded()).
  class Counted {
   public:
    Counted(Upload& upload, const Tally& tally) : upload_(upload), tally_(tally) {}
    Counted(const Counted&) = delete;
    Counted& operator=(const Counted&) = delete;
    ~Counted() {
      if (!upload_.profile_ || tally_.pieces == 0) return;
      upload_.pieces_done_.fetch_add(tally_.pieces);
      upload_.fill_ns_.fetch_add(tally_.fill_ns);
      upload_.wait_ns_.fetch_add(tally_.wait_ns);
      upload_.fill_threads_.fetch_add(1);
    }

   private:
    Upload& upload_;
    const Tally& tally_;
  };

  void record_profile(int64_t wall_ns) const {
    UploadProfile profile;
    profile.wall_us = static_cast<double>(wall_ns) / 1e3;
    profile.fill_threads = fill_threads_.load();
    profile.pieces = pieces_done_.load();
    profile.fill_us = static_cast<double>(fill_ns_.load()) / 1e3;
    profile.slot_wait_us = static_cast<double>(wait_ns_.load()) / 1e3;
    profile.queuer_pump_us = static_cast<double>(pump_ns_) / 1e3;
    profile.queuer_idle_us = static_cast<double>(idle_ns_) / 1e3;
    record_upload_profile(profile);
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
  void fill_and_queue(int64_t i, Tally& tally) {
    const size_t slot = slot_of(i);
    const int64_t t0 = profile_ ? now_ns() : 0;
    if (i >= slots_) {
      // The slot's previous chunk was taken before this one; wait until its DMA is queued
      // (by whichever thread took it), then until that DMA has run.
      while (done_[slot].load(std::memory_order_acquire) != i - slots_) {
        if (failed()) return;
        cpu_relax();
      }
      MTC_CUDA_CHECK(cudaEventSynchronize(events_[slot]));
    }
    const int64_t t1 = profile_ ? now_ns() : 0;
    const HostToDeviceSpan& chunk = chunks_[static_cast<size_t>(i)];
    std::memcpy(staging(i), chunk.src, static_cast<size_t>(chunk.bytes));
    if (profile_) tally_piece(tally, t0, t1);
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
  void fill(int64_t p, Tally& tally) {
    const Piece& piece = pieces_[static_cast<size_t>(p)];
    const int64_t t0 = profile_ ? now_ns() : 0;
    while (!slot_free(piece.chunk)) {
      if (failed()) return;
      cpu_relax();
    }
    const int64_t t1 = profile_ ? now_ns() : 0;
    copy_piece(piece, piece.offset, piece.bytes);
    if (profile_) tally_piece(tally, t0, t1);
    piece_filled(piece);
  }
  // A piece whose thread began waiting for its slot at t0 and copying at t1 was just copied.
  static void tally_piece(Tally& tally, int64_t t0, int64_t t1) {
    ++tally.pieces;
    tally.wait_ns += t1 - t0;
    tally.fill_ns += now_ns() - t1;
  }

  // Queues the DMAs of the chunks filled next in order, and counts those whose DMA has run.
  void pump() {
    while (queued_ < size() &&
           unfilled_[static_cast<size_t>(queued_)].load(std::memory_order_acquire) == 0)
      queue_dma(queued_++);
    for (int64_t freed = freed_.load(std::memory_order_relaxed); freed < queued_; ++freed) {
      bool done = false;
      MTC_CUDA_POLL(cuda_event_query(events_[slot_of(freed)], done));
      if (!done) break;
      freed_.store(freed + 1, std::memory_order_release);
    }
  }

  // The upload's own thread: queues every chunk's DMA and, while it has none to queue, fills
  // the next chunk whose slot is free, in pieces, queuing between them.
  void queue_all(Tally& tally) {
    const c10::cuda::CUDAGuard guard(device_);
    const int64_t start = profile_ ? now_ns() : 0;
    while (queued_ < size()) {
      timed_pump();
      if (failed()) break;
      int64_t p = next_.load(std::memory_order_relaxed);
      if (p < items() && slot_free(pieces_[static_cast<size_t>(p)].chunk) &&
          next_.compare_exchange_strong(p, p + 1)) {
        const Piece& piece = pieces_[static_cast<size_t>(p)];
        for (int64_t done = 0; done < piece.bytes; done += kQueuerPieceBytes) {
          const int64_t t1 = profile_ ? now_ns() : 0;
          copy_piece(piece, piece.offset + done, std::min(kQueuerPieceBytes, piece.bytes - done));
          if (profile_) tally.fill_ns += now_ns() - t1;
          timed_pump();
        }
        ++tally.pieces;
        piece_filled(piece);
        continue;
      }
      cpu_relax();
    }
    if (profile_) idle_ns_ = now_ns() - start - pump_ns_ - tally.fill_ns;
  }
  void timed_pump() {
    if (!profile_) return pump();
    const int64_t t0 = now_ns();
    pump();
    pump_ns_ += now_ns() - t0;
  }

  const std::vector<HostToDeviceSpan> chunks_;
  const std::vector<Piece> pieces_;  // one queuer only
  std::byte* const ring_;
  const int slots_;
  const int64_t slot_bytes_;
  const c10::DeviceIndex device_;
  const cudaStream_t stream_;
  const bool one_queuer_;
  const bool profile_;
  const std::unique_ptr<std::atomic<int64_t>[]> done_;      // by slot, each thread queuing
  const std::unique_ptr<std::atomic<int64_t>[]> unfilled_;  // by chunk, one queuer
  std::vector<cudaEvent_t> events_;
  std::atomic<int64_t> next_{0};   // the next piece (one queuer) or chunk to fill
  std::atomic<int64_t> freed_{0};  // one queuer only
  int64_t queued_ = 0;             // one queuer only, its thread alone
  std::atomic<int> active_{0};     // threads between joining and being done
  std::atomic<bool> failed_{false};
  // The profile (set_upload_profiling): summed over the threads, and the queuer's own.
  std::atomic<int64_t> pieces_done_{0};
  std::atomic<int64_t> fill_ns_{0};
  std::atomic<int64_t> wait_ns_{0};
  std::atomic<int> fill_threads_{0};
  int64_t pump_ns_ = 0;
  int64_t idle_ns_ = 0;
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace

void run_upload(std::vector<HostToDeviceSpan> chunks, std::byte* ring, int slots,
                int64_t slot_bytes, c10::DeviceIndex device, cudaStream_t stream,
                const UploadPlan& plan, WorkerPool& pool) {
  const auto upload = std::make_shared<Upload>(std::move(chunks), ring, slots, slot_bytes, device,
                                               stream, plan.one_queuer, plan.piece_bytes);
  try {
    upload->create_events();
    pool.submit_copies([upload] { upload->join(); }, static_cast<int>(plan.helpers));
    if (plan.crew_helpers > 0) {
      plan.crew->submit_copies([upload] { upload->join(); }, static_cast<int>(plan.crew_helpers));
      count_crew_tasks(plan.crew_helpers);
    }
    upload->run_and_finish();
  } catch (...) {
    // Helpers queued before a failure (say, in submit_copies) may be filling: done first.
    upload->abandon();
    upload->release_events();
    throw;
  }
  upload->release_events();
}

}  // namespace mtc::detail
