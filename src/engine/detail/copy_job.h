// One copy in flight: its input, the new structure, its routes' results and its completion. Shared
// by the handle and, while it runs, the worker that orchestrates it.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/InferenceMode.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "detail/completion.h"
#include "detail/leaf_router.h"
#include "detail/routes.h"
#include "detail/worker_pool.h"
#include "mtc/copier.h"

namespace mtc::detail {

struct ElementTickets;

// A structure whose first root element suggests at least this many leaves in all is walked by
// several threads: the copy's own and pool workers, which take root elements in turn as they
// wake up. Below it, handing work to other threads costs more than it saves (results/NOTES.md).
inline constexpr int64_t kDefaultParallelWalkLeaves = 256;
// At most one walking thread per this many (estimated) leaves: each costs a wake-up and a
// chunk of its own (CPU->GPU: with an allocation and a DMA of its own).
inline constexpr int64_t kDefaultLeavesPerPart = 128;

// Microseconds from `from` to `to`: CopyStats' timings.
inline double micros_between(std::chrono::steady_clock::time_point from,
                             std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}
// Changes both, process-wide (for benchmarks that compare settings in one run); the pools forget
// their remembered splits (below) when either changes.
void set_parallel_walk(int64_t min_leaves, int64_t leaves_per_part = kDefaultLeavesPerPart);

// A walk split among threads decides how many helpers to queue from its root's first element,
// walked first. A pool remembers what its last copy's walk was split into (from all its leaves),
// with its root's length: the next copy of a root as long (a training loop's next batch) queues
// that many helpers at once, and its own thread walks element 0 beside them. A root fed element
// by element (RootFeed) always walks its first element first.
// The helpers remembered for a root of `elements` in `pool`'s copies (0: none, or walk first).
int64_t remembered_helpers(const WorkerPool& pool, int64_t elements);
void remember_split(const WorkerPool& pool, int64_t elements, int64_t helpers);
// On by default; off, every walk decides from its first element (for benchmarks that compare).
void set_early_split(bool on);

// Outputs made after the walk (views of the chunks a GPU->CPU copy packs after it: the tensors of
// a second source device, which the walk does not pack; ~0.14 us each, one after another on one
// thread) are placed by the pool in parts of this many once there are at least twice as many: 528
// views took 72 us on one thread (results/NOTES.md, 2026-11-26).
inline constexpr int64_t kOutputsPerPart = 128;

class CopyJob;

// What a queued task holds of its job: a worker takes the job through it, and dropping the
// handle closes it, so that no worker can take a new reference afterwards (copier.cpp).
class TaskGate {
 public:
  explicit TaskGate(const std::shared_ptr<CopyJob>& job) : job_(job) {}
  // The job, or null once the gate is closed.
  std::shared_ptr<CopyJob> take() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return job_.lock();
  }
  void close() {
    const std::lock_guard<std::mutex> lock(mutex_);
    job_.reset();
  }

 private:
  std::mutex mutex_;
  std::weak_ptr<CopyJob> job_;
};

class CopyJob {
 public:
  // `pool`: the workers that run the job and help with it (worker_pool_for the target).
  // `reuse` (may be null): outputs offered for reuse (mtc::ReusableOutputs). `feed` (may be
  // null): where `input`, its root, gets its elements (mtc::RootFeed).
  CopyJob(c10::IValue input, c10::Device target, const CopyOptions& options,
          CapturedStreams streams, WorkerPool& pool, std::shared_ptr<ReusableOutputs> reuse,
          std::shared_ptr<RootFeed> feed = nullptr);
  CopyJob(const CopyJob&) = delete;  // shared through shared_ptr only
  CopyJob& operator=(const CopyJob&) = delete;
  ~CopyJob();

  // Walks, stages, submits and builds the outputs, unless another thread already claimed the
  // job. Never throws: a failure is kept for get().
  // Returns whether this call ran the job.
  bool run_if_unclaimed() noexcept {
    if (claimed_.exchange(true, std::memory_order_acq_rel)) return false;
    run();
    return true;
  }
  // After run_if_unclaimed() ran the job on this thread: the stream whose device blocks
  // (device_block_stash.h) a worker should make for the next copy, if the job was a successful
  // copy to a GPU.
  std::optional<c10::cuda::CUDAStream> stream_to_stash_for() const;

  // Whether the calling thread still has to put elements of the job's root (mtc::RootFeed).
  bool fed_by_this_thread() const { return feed_ && feed_->fed_by_this_thread(); }

  bool ready();
  c10::IValue get();
  // See CopyHandle::take_result() and wait().
  c10::IValue take_result();
  void wait();
  CopyStats stats() const { return stats_; }
  // Set once, by start_copy, when a task is queued for the job; closed by the handle.
  void set_task_gate(std::shared_ptr<TaskGate> gate) { task_gate_ = std::move(gate); }
  void close_task_gate() {
    if (task_gate_) task_gate_->close();
  }
  // Waits for the job and its device work; for the handle's destructor.
  void wait_noexcept() noexcept;

 private:
  enum State : int { kPending = 0, kSubmitted = 1, kFailed = 2 };
  void run() noexcept;
  void run_routes();
  // Builds result_ with router_ as the policy, in parts on the pool for large structures.
  void walk();
  // From get(): walks root elements of a walk in parts that is under way on another thread.
  void join_walk();
  // Returns once root element `i` is there to walk; throws c10::Error if it never comes.
  void wait_for_element(int64_t i) const;
  // The caller's InferenceMode at start_copy, for the threads that create the outputs: tensors
  // created inside it are inference tensors, as .to() would give there. Set where the thread is
  // in the other mode (a caller that helps with pool work while it waits in get() may be, for its
  // own copy), and only there: InferenceMode(false) would also turn grad mode on, under a
  // caller's no_grad that runs its own copy.
  std::optional<c10::InferenceMode> inference_guard() const {
    if (c10::InferenceMode::is_enabled() == inference_mode_) return std::nullopt;
    return std::optional<c10::InferenceMode>(std::in_place, inference_mode_);
  }
  // Whether the parts of a split walk submit their packed chunks themselves.
  bool pack_submitted_in_walk() const { return target_.is_cuda() && options_.pack_cpu_tensors; }
  // Puts the routes' outputs (and the deferred views) into their slots; a CPU target's many
  // outputs in parts on the pool.
  void place_outputs();
  // place_outputs for deferred leaves [begin, end). With `own_storages`, views are made on
  // aliases of the storages, made for this range (see make_alias_storage).
  void place_outputs(size_t begin, size_t end, bool own_storages);
  // Waits until the job is submitted or failed; with `join`, walks part of a split walk meanwhile.
  int wait_submitted(bool join);
  // Runs the job if no thread has, waits until it is submitted; rethrows a failure.
  void wait_started();
  void sync_streams_noexcept() noexcept;

  c10::IValue input_;  // kept to the end: the walk records pointers into its tensors
  c10::Device target_;
  CopyOptions options_;
  CapturedStreams streams_;
  WorkerPool& pool_;
  bool inference_mode_ = c10::InferenceMode::is_enabled();  // constructed on the caller's thread

  CopyStats stats_;
  std::shared_ptr<ReusableOutputs> reuse_;  // held until the job dies: the routers point into it
  std::shared_ptr<RootFeed> feed_;          // null: every element of input_ is there at start
  c10::IValue result_;
  LeafRouter router_;   // the walk's policy; holds the packed chunks and the deferred leaves
  bool split_ = false;  // the walk ran in parts
  std::vector<at::Tensor> outputs_;  // by deferred leaf, while the routes fill them
  std::vector<DeferredView> views_;  // by deferred leaf
  std::vector<c10::Storage> storages_;
  Completion completion_;
  std::mutex completion_mutex_;
  std::exception_ptr error_;
  std::mutex walk_mutex_;
  std::shared_ptr<ElementTickets> open_walk_;  // while a walk in parts hands out elements
  std::atomic<bool> walk_open_{false};         // open_walk_ is set (read without the lock)
  std::atomic<bool> claimed_{false};           // a thread has started run()
  std::atomic<bool> taken_{false};             // take_result() moved result_ out
  // Its own cache lines: get() spins reading it while the worker writes the fields above.
  alignas(128) std::atomic<int> state_{kPending};
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  std::shared_ptr<TaskGate> task_gate_;
};

}  // namespace mtc::detail
