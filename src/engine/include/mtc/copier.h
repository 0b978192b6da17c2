// mtc/copier.h: copy every tensor of a nested structure to a device, asynchronously.
//
//   mtc::CopyHandle h = mtc::start_copy(batch, c10::Device(c10::kCUDA, 0));
//   ... other work ...
//   c10::IValue on_gpu = h.get();
//
// The structure may be a tensor, or lists (generic or typed), tuples and dicts (string or
// integer keys) nested up to 1,000 levels deep, and no deeper than the stack of the thread that
// walks it allows (mtc/stack_room.h). Tensor leaves are copied; every other leaf passes
// through unchanged. The result has new containers of the same kinds, in the same order.
//
// Contract: the input (containers and tensors) must not be modified (by the host or by queued
// device work issued after start_copy) until the copy has completed, that is until ready() returns
// true or get() returns. Work queued on the relevant CUDA streams before start_copy is ordered
// before the copy; get() returns only after the data is on the target.
#pragma once

#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace mtc {

// The largest CopyOptions::min_packed_alignment_bytes start_copy takes: 1 GiB.
inline constexpr int64_t kMaxPackedAlignmentBytes = int64_t{1} << 30;

struct CopyOptions {
  // Stage CPU sources through pooled pinned memory so the DMA runs asynchronously.
  bool use_pinned_staging = true;
  // Lay small contiguous CPU tensors (1 B .. 256 KiB) into shared chunks: one allocation and
  // one host-to-device copy per chunk instead of one per tensor.
  bool pack_cpu_tensors = true;
  // Each packed tensor starts at a multiple of max(this, element size); for an alignment that
  // is not a power of two, of lcm(this, element size). From 1 to kMaxPackedAlignmentBytes.
  int64_t min_packed_alignment_bytes = 16;
  // Payload limit of one packed chunk. Must be > 0.
  int64_t max_packed_chunk_bytes = 32 << 20;
  // Do planning, staging and submission on a worker pool; start_copy returns at once. Each CUDA
  // device has workers of its own: a copy to a GPU uses that GPU's, a copy to the CPU those of
  // the calling thread's current CUDA device (a thread that drives one GPU of several should
  // make it current, as torch.cuda.set_device does; otherwise its copies back share the
  // workers of device 0).
  bool use_background_thread = true;
  // GPU->CPU: the outputs land in pinned (page-locked) memory from torch's pinned-memory cache,
  // with no host copy after the DMA: each tensor that is not packed in a pinned tensor of its
  // own, packed ones as views of one pinned block per chunk run (a second source device's, packed
  // after the walk, one per chunk). The pinned outputs hold page-locked memory for as long as
  // they live.
  bool pinned_host_outputs = false;
};

// Largest tensor (in bytes) that is packed.
inline constexpr int64_t kMaxPackedTensorBytes = 256 << 10;

// What one copy did, for benchmarks and diagnostics. Filled once the copy is complete.
struct CopyStats {
  int64_t tensors = 0;       // tensor leaves in the input
  int64_t bytes = 0;         // payload bytes of all tensor leaves
  int64_t reused = 0;        // leaves already on the target, returned as they are
  int64_t packed = 0;        // leaves that went through a packed chunk
  int64_t chunks = 0;        // packed chunks (CPU->GPU: an allocation and a DMA each; GPU->CPU:
                             // consecutive chunks of one device share a gather, a DMA and a block)
  int64_t per_tensor = 0;    // leaves copied one by one
  int64_t pinned_bytes = 0;  // staging bytes taken from the pinned pool
  int64_t walk_threads = 0;  // threads that walked part of the structure (1: not split)
  int64_t recycled = 0;      // packed outputs made in a TensorImpl offered by ReusableOutputs
  // Where the time went, in microseconds of wall time, as the engine measured it.
  double queued_us = 0;    // start_copy until a worker picked the job up
  double traverse_us = 0;  // the walk: new containers, packing plan, packed output views (a
                           // walk split in parts also stages and queues its chunks here)
  double submit_us = 0;    // staging, device allocations and queuing the remaining device work
  double outputs_us = 0;   // placing the outputs of the tensors that were not packed
  // A root fed element by element (RootFeed): how often a walking thread went to wait for one
  // (RootFeed::sleeps), and how long the walk went on after the last one arrived or after it
  // began, whichever came later (walking, staging and queueing that the feeder no longer
  // overlaps).
  int64_t feed_sleeps = 0;
  double feed_tail_us = 0;
  // A walk split among threads, the end of traverse_us: split_wait_us from the walk's own thread
  // having walked its elements and staged its chunks until every other thread had too (queuing
  // done meanwhile included); split_queue_us the time that thread spent queuing every thread's
  // CPU->GPU chunks (device memory and one DMA call a chunk), in the wait or after it. Both 0
  // when the walk is not split.
  double split_wait_us = 0;
  double split_queue_us = 0;
  // Also of a split walk, to tell late helpers from slow ones: split_join_us from the walk
  // handing out its elements until the last thread that walked any took its first;
  // split_leaf_ns the threads' time walking elements (staging not included) over the tensor
  // leaves they walked, all threads together; split_stage_us the longest any thread spent
  // staging its chunks after its walk. All 0 when the walk is not split.
  double split_join_us = 0;
  double split_leaf_ns = 0;
  double split_stage_us = 0;
  // Of the packed chunks' submission, wherever in the copy it ran (in traverse_us for a split
  // CPU->GPU walk, in submit_us otherwise): allocate_us in taking their device memory, pinned
  // staging and GPU->CPU host blocks; driver_us in the CUDA calls that queue their device work
  // (DMAs, gather launches) and the copy's completion events.
  double allocate_us = 0;
  double driver_us = 0;
};

namespace detail {
class CopyJob;
}

// The pending result of start_copy. Move-only: it owns the copy's completion.
class CopyHandle {
 public:
  CopyHandle() = default;
  explicit CopyHandle(std::shared_ptr<detail::CopyJob> job);
  CopyHandle(CopyHandle&&) noexcept;
  CopyHandle& operator=(CopyHandle&&) noexcept;
  CopyHandle(const CopyHandle&) = delete;
  CopyHandle& operator=(const CopyHandle&) = delete;
  // Waits for the copy's device work so no buffer in flight is released; never throws.
  ~CopyHandle();

  // Never blocks. True once every copy has completed; rethrows a failure of the copy. False
  // while another thread waits for the copy in get() or wait(); true once that wait is over.
  bool ready() const;
  // Blocks until done and returns the structure on the target; rethrows a failure.
  // May be called more than once. If no worker has started the copy yet, the calling thread
  // runs it (instead of waiting for a worker to wake up).
  c10::IValue get();
  // For bindings that wrap the outputs in objects of their own while the device works: waits
  // only until the outputs exist (the device may still be writing them) and moves the structure
  // out of the handle, so the caller holds the only references to the new tensors. Their data
  // may be read once wait() returned or ready() is true. Rethrows a failure; get() and
  // take_result() afterwards throw.
  c10::IValue take_result();
  // Blocks until done, like get() without the result; rethrows a failure.
  void wait();
  // Valid after get() or once ready() returned true.
  CopyStats stats() const;
  bool valid() const { return job_ != nullptr; }

 private:
  std::shared_ptr<detail::CopyJob> job_;
};

// Starts copying every tensor of `data` to `device`. Throws c10::ValueError (a c10::Error) for
// invalid arguments: a target that is neither cpu nor cuda, a device index that does not exist,
// a CUDA target without CUDA, alignment < 1 or above kMaxPackedAlignmentBytes, chunk size <= 0. The
// structure itself is walked on the worker: a leaf that cannot be copied (sparse or MKL-DNN,
// quantized, nested, or on a device other than cpu/cuda) fails the copy, whatever the target, and
// get() rethrows that error naming the leaf.
CopyHandle start_copy(const c10::IValue& data, const c10::Device& device,
                      const CopyOptions& options = {});

// For bindings that keep a result's tensors after the program has dropped them (the Python
// module): the TensorImpls of earlier outputs, offered to become this copy's outputs instead of
// new ones. Making a new output and later freeing it costs far more from Python (its object's
// teardown and making, ~0.3 us per tensor on the GPU host) than pointing an unused one at the new
// data.
//
// A packed CPU->GPU leaf whose offered TensorImpl qualifies gets it as its output: pointed at
// this copy's chunk, with the leaf's sizes, strides and math bits, its version counter at 0. Its
// entry in the result is then an undefined tensor, and reused[leaf] is 1. Qualifies: an output
// this engine made, on the target device, of the leaf's dtype, with the dispatch keys a new
// output would get (inference or not, as the caller's InferenceMode at start_copy), no autograd
// metadata or names, a version counter no other tensor shares, and no reference (strong or weak)
// but the caller's one. Anything else is left as it was, and the leaf gets a new output.
//
// The caller keeps each offered TensorImpl alive, and out of every other thread's reach, until
// the copy is done: its handle destroyed, or take_result() returned. The storage a reused
// TensorImpl had lives on in the copy until its handle is destroyed, and dies there, on that
// thread (as the copy's references to its inputs do): never on a worker.
struct ReusableOutputs {
  // By tensor leaf, in pre-order of the whole structure: the TensorImpl offered, or null.
  std::vector<c10::TensorImpl*> by_leaf;
  // For a container root: the pre-order index of each root element's first tensor leaf (a walk
  // split by root element numbers leaves from its element's first). Without it, only the leaves
  // of a walk that is not split, and of the first root element, can be matched.
  std::vector<int64_t> element_first_leaf;
  // Filled by the copy, sized as by_leaf by start_copy: 1 where the offered TensorImpl became the
  // leaf's output. Read once the copy is done.
  std::vector<uint8_t> reused;
};
CopyHandle start_copy(const c10::IValue& data, const c10::Device& device,
                      const CopyOptions& options, std::shared_ptr<ReusableOutputs> reuse);

// For bindings that take a structure of their own apart (the Python module): a root list whose
// elements arrive one at a time, from one thread and in order, while the copy already walks
// those that have arrived. The binding's walk of its own structure then overlaps the engine's
// walk, where the engine would otherwise start only once the whole input exists.
//
// The copy's threads wait for each element as they reach it, so start_copy with a feed needs
// use_background_thread. A binding that gives up part way (its own walk failed) calls abandon():
// the copy then fails, and the elements put so far live in root() until the handle is destroyed.
// Every element must be put, or the feed abandoned, before the handle is waited for or destroyed.
class RootFeed {
 public:
  // A root of `elements` elements (a generic list); the calling thread is the one that puts them.
  explicit RootFeed(int64_t elements);
  RootFeed(const RootFeed&) = delete;
  RootFeed& operator=(const RootFeed&) = delete;

  int64_t size() const { return size_; }
  int64_t arrived() const { return state_.load(std::memory_order_acquire) & kCount; }
  // Puts the next element (element arrived()); throws c10::Error once all have arrived or the
  // feed was abandoned.
  void put(c10::IValue element);
  // No element comes after those put; the copy fails with a c10::Error saying so.
  void abandon() noexcept;
  bool abandoned() const { return (state_.load(std::memory_order_acquire) & kAbandoned) != 0; }
  // The root: the elements put so far, None in the places of those still to come.
  const c10::IValue& root() const { return root_; }
  // Blocks until element `i` has arrived (true) or the feed was abandoned before it (false).
  bool wait_for(int64_t i) const;
  // How many times a thread went to wait in wait_for() after its short spin: an upper bound on
  // its sleeps (the wait returns at once if the element came meanwhile). A sleep costs the next
  // put() a system call and the thread a wake-up.
  int64_t sleeps() const { return sleeps_.load(std::memory_order_relaxed); }
  // When the last element arrived: at construction for a root of none, the epoch until then.
  std::chrono::steady_clock::time_point completed_at() const {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(completed_at_.load(std::memory_order_acquire)));
  }
  // The thread that puts the elements.
  std::thread::id feeder() const { return feeder_; }
  // Whether elements are still to come from the calling thread: it must not wait for them.
  bool fed_by_this_thread() const {
    return std::this_thread::get_id() == feeder_ && arrived() < size_ && !abandoned();
  }

 private:
  c10::impl::GenericList list_{c10::AnyType::get()};
  c10::IValue root_;  // list_
  int64_t size_;
  std::thread::id feeder_ = std::this_thread::get_id();
  // The elements arrived, and whether the feed was abandoned, in one word: a thread that sleeps
  // until it changes wakes for either.
  static constexpr int64_t kAbandoned = int64_t{1} << 62;
  static constexpr int64_t kCount = kAbandoned - 1;
  std::atomic<int64_t> state_{0};
  mutable std::atomic<int64_t> sleeps_{0};
  std::atomic<std::chrono::steady_clock::rep> completed_at_{0};
};
// start_copy of `feed`'s root: the same copy, started before its elements exist. Throws
// c10::ValueError without use_background_thread, besides start_copy's own argument errors.
CopyHandle start_copy(std::shared_ptr<RootFeed> feed, const c10::Device& device,
                      const CopyOptions& options, std::shared_ptr<ReusableOutputs> reuse);

// How a structure is split among walking threads, process-wide, for every later copy: one whose
// first root element suggests at least `min_leaves` tensor leaves in all (default 256) is walked
// by several threads, at most one per `leaves_per_part` leaves (default 128), each taking root
// elements in turn. For tuning and for benchmarks that compare settings in one process. Throws
// c10::ValueError unless both are >= 1.
void set_walk_split(int64_t min_leaves, int64_t leaves_per_part);

// The pools of pinned (page-locked) host memory that stage copies, one per CUDA device: a copy
// to a GPU or from it stages in that GPU's pool, so GPUs copying at once do not share one. Each
// grows with its device's demand and, once a repeated workload has run a copy or two, holds
// about 1.125x the most staging that was in flight at once and allocates nothing more.
struct PinnedPoolStats {
  int64_t reserved_bytes = 0;       // pinned memory the pool holds now: its size
  int64_t peak_reserved_bytes = 0;  // the largest size since start or reset_pinned_pool_peaks()
  int64_t in_use_bytes = 0;         // staging held by copies in flight
  int64_t peak_in_use_bytes = 0;    // the most in flight at once, same period
  int64_t limit_bytes = 0;          // the most the pool may hold; 0: no limit
  int64_t slabs = 0;                // separate pinned allocations held now
  int64_t slab_allocations = 0;     // pinned allocations made so far (cudaHostAlloc)
  int64_t slab_frees = 0;           // pinned allocations given back so far (cudaFreeHost)
};

// Every device's pool added up: sizes, bytes in use and allocation counts are sums, a peak is
// the sum of the pools' peaks (which may have come at different moments), the limit is each
// pool's. Never blocks on copies; throws c10::Error only when MTC_PINNED_POOL_LIMIT_BYTES is set
// to something other than a byte count.
PinnedPoolStats pinned_pool_stats();
// The pool of CUDA device `device` alone (zeros and the limit if no copy has used it yet).
// Throws c10::ValueError for a negative index.
PinnedPoolStats pinned_pool_stats(c10::DeviceIndex device);
// Gives every pinned allocation with nothing in flight back to the system, in every pool;
// returns the bytes freed. The next copies allocate again (about 0.5-1 ms per MB), so call it
// between phases of a program, not between steps. cudaFreeHost may wait for the device to be
// idle.
int64_t release_idle_pinned_memory();
// The most pinned memory each device's pool may hold, in bytes; 0 removes the limit. The
// environment variable MTC_PINNED_POOL_LIMIT_BYTES sets it when the pools are first used. A copy
// whose staging would need a larger pool fails, and get() throws c10::Error saying so; the
// engine stays usable. Lowering the limit below a pool's size frees its idle allocations at once.
void set_pinned_pool_limit(int64_t bytes);
// Restarts every pool's peaks from its current figures (to measure one workload's peak).
void reset_pinned_pool_peaks();

// A CPU->GPU copy whose job a pool worker ran leaves device memory for the next copy's packed
// chunks: once the job has handed over its result, the worker allocates one block per chunk the
// copy queued (a quarter larger than it, at most 16 blocks of at most 1 MiB a device), on the
// copy's stream, and the next copy to that device on the same stream takes them instead of
// asking torch's caching allocator on its critical path. torch counts them as allocated (about
// 200 KB for a batch of 150 KB); each such copy replaces them.

// GPU->CPU outputs of 64 KiB and more (pageable ones; pinned_host_outputs off) take their memory
// from a process-wide cache that keeps it once the outputs are freed, up to a limit (256 MiB at
// start), and gives it to the next outputs of about the same size (at most 1/4 larger). Fresh
// pageable memory is mapped page by page on first touch: a copy that wrote 8 MiB of new outputs
// paid 2,048 page faults inside it.
struct HostCacheStats {
  int64_t idle_bytes = 0;    // memory of freed outputs kept for the next ones
  int64_t idle_blocks = 0;   // blocks kept
  int64_t in_use_bytes = 0;  // memory of outputs alive now
  int64_t limit_bytes = 0;   // the most idle memory kept
  int64_t hits = 0;          // outputs served by a kept block, since start
  int64_t misses = 0;        // outputs that needed a new block, since start
};
HostCacheStats host_cache_stats();
// Frees every idle block; returns the bytes freed. Outputs alive now are not affected.
int64_t release_cached_host_memory();
// The most idle memory the cache keeps, in bytes; 0 keeps none (every output's memory goes back
// to the system when it dies, as torch's CPU allocator does). Frees idle blocks above it at once.
void set_host_cache_limit(int64_t bytes);

}  // namespace mtc
