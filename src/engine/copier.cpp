#include "mtc/copier.h"

#include <ATen/Context.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <thread>

#include "detail/copy_job.h"
#include "detail/device_block_stash.h"
#include "detail/dict_shelf.h"
#include "detail/host_block_cache.h"
#include "detail/impl_pool.h"
#include "detail/pinned_pool_set.h"
#include "detail/worker_pool_set.h"
#include "mtc/nvtx.h"

namespace mtc {
namespace {

// Argument errors are c10::ValueError (a c10::Error), so bindings can tell them from failures.
c10::Device resolve_target(const c10::Device& device) {
  if (device.is_cpu()) return c10::Device(c10::kCPU);
  TORCH_CHECK_VALUE(device.is_cuda(), "mtc::start_copy: unsupported target device ", device.str(),
                    " (only cpu and cuda are supported)");
  const c10::DeviceIndex count = c10::cuda::device_count();
  TORCH_CHECK_VALUE(count > 0, "mtc::start_copy: target ", device.str(),
                    " requested but no CUDA device is available");
  const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
  TORCH_CHECK_VALUE(index >= 0 && index < count, "mtc::start_copy: target ", device.str(),
                    " does not exist (", static_cast<int>(count), " CUDA device(s) visible)");
  return c10::Device(c10::kCUDA, index);
}

void validate(const CopyOptions& options) {
  TORCH_CHECK_VALUE(options.min_packed_alignment_bytes >= 1,
                    "mtc::start_copy: min_packed_alignment_bytes must be >= 1, got ",
                    options.min_packed_alignment_bytes);
  // The packer's offsets are sums and least common multiples of alignments: bounded, they cannot
  // overflow.
  TORCH_CHECK_VALUE(options.min_packed_alignment_bytes <= kMaxPackedAlignmentBytes,
                    "mtc::start_copy: min_packed_alignment_bytes must be <= ",
                    kMaxPackedAlignmentBytes, " (1 GiB), got ", options.min_packed_alignment_bytes);
  TORCH_CHECK_VALUE(options.max_packed_chunk_bytes > 0,
                    "mtc::start_copy: max_packed_chunk_bytes must be > 0, got ",
                    options.max_packed_chunk_bytes);
}

// Whether this process uses CUDA: a primary CUDA context on any of its `devices`, where torch's
// and the runtime's allocations live. Until one exists no tensor of the process is on a GPU, and
// asking for a device's current stream or setting up torch's CUDA state would make a context
// (hundreds of MB of device memory, held by a process that never meant to use the GPU). Once one
// exists, torch has set those up too and capturing makes nothing new. Seen once, remembered: a
// process that uses CUDA pays no query; one that copies only between CPUs, one per device per
// copy. A driver that cannot answer (in a process forked after its parent used CUDA) counts as
// in use, as every copy was treated before.
bool cuda_in_use(c10::DeviceIndex devices) {
  static std::atomic<bool> seen{false};
  if (seen.load(std::memory_order_relaxed)) return true;
  for (c10::DeviceIndex d = 0; d < devices; ++d) {
    bool context = true;
    try {
      context = c10::cuda::hasPrimaryContext(d);
    } catch (const std::exception&) {
    }
    if (context) {
      seen.store(true, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

// Waits for the job and destroys it on this thread, the one that drops the handle, never on a
// worker. The job holds the caller's tensors (its input; with a CPU target the result shares
// them), and dropping a tensor whose Python object lives takes the GIL (torch's PyObject
// preservation): a worker that did so while the interpreter shuts down would be ended by Python
// inside a noexcept destructor (std::terminate; results/NOTES.md), and at other times it would
// wait for the GIL of a thread that may be waiting for it. Once the task's gate is closed no
// worker can take a new reference, so the count only falls: a worker holds the job only while it
// runs it or finds its task stale, microseconds after the job's state is published.
//
// A job no worker has claimed yet runs here first, as get() would run it: every worker may be
// busy with work that waits for this very thread (the walk of a root it feeds), and a drop that
// only waited would then wait for ever.
void release_here(std::shared_ptr<detail::CopyJob>& job) noexcept {
  if (!job->fed_by_this_thread()) job->run_if_unclaimed();
  job->wait_noexcept();
  job->close_task_gate();
  for (int spins = 0; job.use_count() > 1; ++spins) {
    if (spins < 1000) {
      detail::cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  job.reset();
}

}  // namespace

CopyHandle::CopyHandle(std::shared_ptr<detail::CopyJob> job) : job_(std::move(job)) {}
CopyHandle::CopyHandle(CopyHandle&&) noexcept = default;

CopyHandle& CopyHandle::operator=(CopyHandle&& other) noexcept {
  if (this != &other) {
    if (job_) release_here(job_);
    job_ = std::move(other.job_);
  }
  return *this;
}

CopyHandle::~CopyHandle() {
  if (job_) release_here(job_);
}

bool CopyHandle::ready() const {
  TORCH_CHECK(job_, "mtc::CopyHandle::ready() on an empty handle");
  return job_->ready();
}

c10::IValue CopyHandle::get() {
  TORCH_CHECK(job_, "mtc::CopyHandle::get() on an empty handle");
  return job_->get();
}

c10::IValue CopyHandle::take_result() {
  TORCH_CHECK(job_, "mtc::CopyHandle::take_result() on an empty handle");
  return job_->take_result();
}

void CopyHandle::wait() {
  TORCH_CHECK(job_, "mtc::CopyHandle::wait() on an empty handle");
  job_->wait();
}

CopyStats CopyHandle::stats() const {
  TORCH_CHECK(job_, "mtc::CopyHandle::stats() on an empty handle");
  return job_->stats();
}

CopyHandle start_copy(const c10::IValue& data, const c10::Device& device,
                      const CopyOptions& options) {
  return start_copy(data, device, options, nullptr);
}

namespace {

// Queues the task that runs the job behind `gate`. The feeder of a fed job that pops it (helping
// with pool work in a get() that Python code in its walk called) would wait for elements that
// only it can put: it queues the task again, for a worker, as more work of a copy under way.
void queue_job(detail::WorkerPool& pool, std::shared_ptr<detail::TaskGate> gate, bool starts_copy) {
  pool.submit(
      [&pool, gate] {
        std::shared_ptr<detail::CopyJob> claimed = gate->take();
        if (!claimed) return;
        if (claimed->fed_by_this_thread()) {
          queue_job(pool, gate, /*starts_copy=*/false);
        } else if (claimed->run_if_unclaimed() && detail::WorkerPool::on_worker_thread()) {
          // The next copy's device memory, made here once the result is out, by a worker only (a
          // caller waiting for its own copy may run this task): the job is let go first, so that
          // it ends where it would have without this.
          const std::optional<c10::cuda::CUDAStream> stream = claimed->stream_to_stash_for();
          claimed.reset();
          if (stream) detail::device_block_stash::refill(*stream);
        }
      },
      starts_copy);
}

// start_copy of `data`, or of `feed`'s root when `feed` is set.
CopyHandle start_job(const c10::IValue& data, std::shared_ptr<RootFeed> feed,
                     const c10::Device& device, const CopyOptions& options,
                     std::shared_ptr<ReusableOutputs> reuse) {
  MTC_RANGE(start, "start_copy");
  validate(options);
  const c10::Device target = resolve_target(device);

  // Current streams are per thread, so they are captured here, on the caller's thread: the
  // target's and every other device's (inputs may live on any; there are only a few, and the
  // structure is walked on the worker so start_copy returns at once). A process that does not
  // use CUDA has no tensor on a GPU: its copies between CPUs leave CUDA alone (cuda_in_use).
  detail::CapturedStreams streams;
  if (target.is_cuda()) streams.add(target.index());
  const c10::DeviceIndex devices = c10::cuda::device_count();
  if (devices > 0 && (target.is_cuda() || cuda_in_use(devices))) {
    // The engine allocates through the CUDA caching allocator directly, which torch sets up
    // lazily on first CUDA use; make sure that has happened (a no-op after the first call).
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
    for (c10::DeviceIndex d = 0; d < devices; ++d) streams.add(d);
  }

  // Each device's copies have workers of their own (see worker_pool_set.h).
  detail::WorkerPool& pool = detail::worker_pool_for(target);
  if (reuse) reuse->reused.assign(reuse->by_leaf.size(), 0);
  auto job = std::make_shared<detail::CopyJob>(feed ? feed->root() : data, target, options,
                                               std::move(streams), pool, std::move(reuse),
                                               std::move(feed));
  // With the TensorImpl pool's shards on, the results this thread frees later go back to the
  // workers that made them (impl_pool.h).
  const size_t shard = detail::impl_pool::shard_of_pool(pool.id());
  detail::impl_pool::set_thread_shard(shard);
  // The dict-making thread stops for this copy (dict_shelf.h).
  detail::dict_shelf::copy_started(shard);
  if (options.use_background_thread) {
    // Whoever claims the job first runs it: a worker, or the caller if it reaches get() before
    // any worker has picked the job up. The task reaches the job through its gate: a worker that
    // pops it after the handle was dropped has nothing to do (release_here).
    auto gate = std::make_shared<detail::TaskGate>(job);
    job->set_task_gate(gate);
    queue_job(pool, std::move(gate), /*starts_copy=*/true);
  } else {
    job->run_if_unclaimed();
  }
  return CopyHandle(std::move(job));
}

}  // namespace

CopyHandle start_copy(const c10::IValue& data, const c10::Device& device,
                      const CopyOptions& options, std::shared_ptr<ReusableOutputs> reuse) {
  return start_job(data, nullptr, device, options, std::move(reuse));
}

CopyHandle start_copy(std::shared_ptr<RootFeed> feed, const c10::Device& device,
                      const CopyOptions& options, std::shared_ptr<ReusableOutputs> reuse) {
  TORCH_CHECK_VALUE(feed != nullptr, "mtc::start_copy: the root feed is null");
  // Run on the calling thread, the copy would wait for elements that only this thread can put.
  TORCH_CHECK_VALUE(options.use_background_thread,
                    "mtc::start_copy: a root fed element by element needs use_background_thread");
  return start_job(c10::IValue(), std::move(feed), device, options, std::move(reuse));
}

namespace {
// The steady clock's time as RootFeed::completed_at_ stores it.
std::chrono::steady_clock::rep clock_ticks() {
  return std::chrono::steady_clock::now().time_since_epoch().count();
}
}  // namespace

RootFeed::RootFeed(int64_t elements) : size_(elements) {
  TORCH_CHECK_VALUE(elements >= 0, "mtc::RootFeed: a negative number of elements: ", elements);
  list_.resize(static_cast<size_t>(elements));
  root_ = list_;
  // A root without elements is complete at once.
  if (elements == 0) completed_at_.store(clock_ticks(), std::memory_order_relaxed);
}

void RootFeed::put(c10::IValue element) {
  const int64_t state = state_.load(std::memory_order_relaxed);
  const int64_t i = state & kCount;
  TORCH_CHECK((state & kAbandoned) == 0 && i < size_, "mtc::RootFeed::put: element ", i, " of ",
              size_, (state & kAbandoned) != 0 ? " after abandon()" : " is one too many");
  // The copy's threads read an element only once the count says it is there; no other slot
  // changes meanwhile, and the list itself never grows.
  list_.set(static_cast<size_t>(i), std::move(element));
  // Read by the copy once its walk is over, after the count: stored before it.
  if (i + 1 == size_) completed_at_.store(clock_ticks(), std::memory_order_release);
  state_.fetch_add(1, std::memory_order_release);
  state_.notify_all();  // no system call unless a thread sleeps in wait_for()
}

void RootFeed::abandon() noexcept {
  state_.fetch_or(kAbandoned, std::memory_order_acq_rel);
  state_.notify_all();
}

bool RootFeed::wait_for(int64_t i) const {
  // The binding puts an element every few microseconds: a short spin usually sees it. One that
  // stalls (Python code in its walk), or a machine with fewer cores than threads, gets the
  // waiting threads' cores back while they sleep.
  for (int spins = 0;; ++spins) {
    const int64_t state = state_.load(std::memory_order_acquire);
    if ((state & kCount) > i) return true;
    if ((state & kAbandoned) != 0) return false;
    if (spins < 256) {
      detail::cpu_relax();
    } else {
      sleeps_.fetch_add(1, std::memory_order_relaxed);
      state_.wait(state, std::memory_order_acquire);
    }
  }
}

void set_walk_split(int64_t min_leaves, int64_t leaves_per_part) {
  TORCH_CHECK_VALUE(min_leaves >= 1 && leaves_per_part >= 1,
                    "mtc::set_walk_split: min_leaves and leaves_per_part must be >= 1, got ",
                    min_leaves, " and ", leaves_per_part);
  detail::set_parallel_walk(min_leaves, leaves_per_part);
}

PinnedPoolStats pinned_pool_stats() { return detail::PinnedPoolSet::instance().stats(); }

PinnedPoolStats pinned_pool_stats(c10::DeviceIndex device) {
  TORCH_CHECK_VALUE(device >= 0, "mtc::pinned_pool_stats: ", static_cast<int>(device),
                    " is not a CUDA device index");
  return detail::PinnedPoolSet::instance().stats(device);
}

int64_t release_idle_pinned_memory() { return detail::PinnedPoolSet::instance().release_idle(); }

void set_pinned_pool_limit(int64_t bytes) { detail::PinnedPoolSet::instance().set_limit(bytes); }

void reset_pinned_pool_peaks() { detail::PinnedPoolSet::instance().reset_peaks(); }

HostCacheStats host_cache_stats() { return detail::HostBlockCache::instance().stats(); }

int64_t release_cached_host_memory() { return detail::HostBlockCache::instance().release_idle(); }

void set_host_cache_limit(int64_t bytes) { detail::HostBlockCache::instance().set_limit(bytes); }

}  // namespace mtc
