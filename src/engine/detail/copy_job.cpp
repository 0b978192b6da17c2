#include "detail/copy_job.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "detail/cuda_check.h"
#include "detail/outputs.h"
#include "detail/structure.h"
#include "detail/worker_pool_set.h"
#include "mtc/nvtx.h"

namespace mtc::detail {
namespace {
std::atomic<int64_t> parallel_walk_leaves{kDefaultParallelWalkLeaves};
std::atomic<int64_t> leaves_per_part{kDefaultLeavesPerPart};
}  // namespace

void set_parallel_walk(int64_t min_leaves, int64_t leaves_per_part_) {
  parallel_walk_leaves.store(min_leaves);
  leaves_per_part.store(std::max<int64_t>(1, leaves_per_part_));
}

void CapturedStreams::add(c10::DeviceIndex device) {
  for (const auto& s : streams_)
    if (s.device_index() == device) return;
  streams_.push_back(c10::cuda::getCurrentCUDAStream(device));
}

c10::cuda::CUDAStream CapturedStreams::of(c10::DeviceIndex device) const {
  for (const auto& s : streams_)
    if (s.device_index() == device) return s;
  TORCH_INTERNAL_ASSERT(false, "no stream captured for cuda:", static_cast<int>(device));
}

CopyJob::CopyJob(c10::IValue input, c10::Device target, const CopyOptions& options,
                 CapturedStreams streams, WorkerPool& pool)
    : input_(std::move(input)),
      target_(target),
      options_(options),
      streams_(std::move(streams)),
      pool_(pool),
      router_(target, options_, stats_) {}

CopyJob::~CopyJob() { wait_noexcept(); }

namespace {
double micros_since(std::chrono::steady_clock::time_point& since) {
  const auto now = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(now - since).count();
  since = now;
  return us;
}
}  // namespace

// Hands out the root elements of a split walk, one at a time, to whichever thread asks next.
// Shared with the helper tasks and with callers waiting in get(), which may come after the walk
// is over (a worker that woke late): such a thread gets no element and touches nothing but
// this object.
struct ElementTickets {
  ElementTickets(int64_t n, int max_threads) : elements(n), threads(max_threads) {}
  // The next element to walk; `elements` or more once none is left (or a thread failed).
  int64_t take() { return stop.load(std::memory_order_relaxed) ? elements : next.fetch_add(1); }
  // A thread other than the walk's own walks elements, as long as there are any and a walker
  // slot is free for it.
  void join() {
    active.fetch_add(1);
    if (const int slot = slots.fetch_add(1); slot < threads) {
      if (const int64_t i = take(); i < elements) (*walk)(slot, i);
    }
    active.fetch_sub(1, std::memory_order_release);
  }
  // No element is handed out after this. A thread that holds one counted itself in `active`
  // before taking it, so the walk sees it there after closing.
  void close() { next.fetch_add(elements); }

  const int64_t elements;
  const int threads;             // walker slots; slot 0 is the walk's own thread
  std::atomic<int64_t> next{1};  // element 0 is walked before the split is decided
  std::atomic<int> active{0};    // joined threads between asking for an element and being done
  std::atomic<int> slots{1};
  std::atomic<bool> stop{false};  // a thread failed: the others stop early
  const std::function<void(int, int64_t)>* walk =
      nullptr;  // (slot, first element); valid while open
};

void CopyJob::walk() {
  MTC_RANGE(traverse, "traverse");
  using Copier = StructureCopier<LeafRouter>;
  stats_.walk_threads = 1;
  if (!Copier::is_container(input_)) {
    Copier(router_).copy(input_, result_);
    return;
  }
  // The root's elements are copied one by one and the root assembled around them. The first
  // element tells how large the structure probably is. A large one is walked by several
  // threads, each with its own router (its own chunks, so threads do not share a storage's
  // reference count), taking the elements one at a time in order: the walk's thread starts at
  // once, pool workers join as they wake up (one that wakes late costs nothing) and so does a
  // caller waiting in get().
  const std::vector<const c10::IValue*> elements = Copier::elements_of(input_);
  const auto n = static_cast<int64_t>(elements.size());
  std::vector<c10::IValue> built(static_cast<size_t>(n));
  Copier first(router_);
  if (n > 0) built[0] = first.copy_element(*elements[0], 0);
  const int64_t estimate = stats_.tensors * n;
  const auto helpers =
      std::min<int64_t>({static_cast<int64_t>(pool_.size()), n - 2,
                         estimate / leaves_per_part.load(std::memory_order_relaxed) - 1});
  if (helpers < 1 || estimate < parallel_walk_leaves.load(std::memory_order_relaxed)) {
    for (int64_t i = 1; i < n; ++i)
      built[i] = first.copy_element(*elements[i], static_cast<uint32_t>(i));
    result_ = Copier::assemble(input_, built);
    first.place_elements(result_);
    return;
  }
  // Each thread also stages and submits its own chunks once no element is left, so its
  // submission overlaps the others' walks. Each thread's objects sit on cache lines of their
  // own: routers write their counts and vectors at every leaf.
  struct NoLeaves {  // submissions route no single leaf
    std::vector<at::Tensor> inputs, outputs;
    std::vector<DeferredView> views;
    std::vector<c10::Storage> storages;
  } none;
  struct alignas(128) Walker {
    Walker(CopyJob& job, NoLeaves& no, CopyStats* stats_to_use)
        : context{job.options_,
                  job.target_,
                  no.inputs,
                  no.outputs,
                  no.views,
                  no.storages,
                  stats_to_use ? *stats_to_use : own_stats,
                  completion,
                  job.streams_} {}
    CopyStats own_stats;
    std::optional<LeafRouter> own_router;  // a helper's; the walk's thread uses router_
    std::optional<Copier> own_copier;
    LeafRouter* router = nullptr;
    Copier* copier = nullptr;
    Completion completion;  // what the thread's submission holds
    RouteContext context;
    std::exception_ptr error;
    int64_t error_element = 0;
    int64_t walked = 0;  // root elements
  };
  // One walker per helper, one for a caller that waits in get() and joins, and the walk's own.
  // Made before any other thread joins, so a joining thread cannot fail outside walk_from.
  std::vector<std::unique_ptr<Walker>> walkers;
  for (int64_t k = 0; k <= helpers + 1; ++k) {
    Walker& w =
        *walkers.emplace_back(std::make_unique<Walker>(*this, none, k == 0 ? &stats_ : nullptr));
    w.router = k == 0 ? &router_ : &w.own_router.emplace(target_, options_, w.own_stats);
    w.copier = k == 0 ? &first : &w.own_copier.emplace(*w.router);
  }
  const auto tickets = std::make_shared<ElementTickets>(n, static_cast<int>(walkers.size()));
  // Walks elements from `i` on, as long as there are any; a failing thread records its error
  // and stops. The error reported is the one of the earliest element, whichever thread failed
  // first in time: every element before a failed one has been handed out and is walked, so
  // the message does not vary from run to run (within an element, the first bad leaf fails).
  auto walk_from = [&](Walker& w, int64_t i) {
    try {
      for (; i < n; i = tickets->take()) {
        w.error_element = i;
        ++w.walked;
        w.router->begin_element(i);
        built[static_cast<size_t>(i)] =
            w.copier->copy_element(*elements[i], static_cast<uint32_t>(i));
      }
      if (pack_submitted_in_walk()) submit_packed_host_to_device(w.context, w.router->packed());
    } catch (...) {
      w.error = std::current_exception();
      tickets->stop.store(true, std::memory_order_relaxed);
    }
  };
  const std::function<void(int, int64_t)> join = [&](int slot, int64_t i) {
    const std::optional<c10::InferenceMode> inference = inference_guard();
    walk_from(*walkers[static_cast<size_t>(slot)], i);
  };
  tickets->walk = &join;
  {
    std::lock_guard<std::mutex> lock(walk_mutex_);
    open_walk_ = tickets;
  }
  walk_open_.store(true, std::memory_order_release);
  pool_.submit_copies([tickets] { tickets->join(); }, static_cast<int>(helpers));
  walk_from(*walkers[0], tickets->take());
  tickets->close();
  walk_open_.store(false, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(walk_mutex_);
    open_walk_.reset();
  }
  while (tickets->active.load(std::memory_order_acquire) != 0) cpu_relax();
  // Threads that did submit hold staging their DMAs may still read: it goes to the job's
  // completion, which the failure path waits for after synchronizing the streams.
  const Walker* failed = nullptr;
  for (const auto& w : walkers) {
    completion_.absorb(w->completion);
    if (w->error && (!failed || w->error_element < failed->error_element)) failed = w.get();
  }
  if (failed) std::rethrow_exception(failed->error);
  result_ = Copier::assemble(input_, built);
  stats_.walk_threads = 0;
  for (const auto& w : walkers) {
    if (w->walked == 0) continue;
    ++stats_.walk_threads;
    w->copier->place_elements(result_);
    if (w->router != &router_) router_.absorb(*w->router);
  }
  split_ = true;
}

void CopyJob::join_walk() {
  std::shared_ptr<ElementTickets> tickets;
  {
    std::lock_guard<std::mutex> lock(walk_mutex_);
    tickets = open_walk_;
  }
  if (tickets) tickets->join();
}

void CopyJob::run_routes() {
  auto clock = created_;
  stats_.queued_us = micros_since(clock);
  walk();
  stats_.traverse_us = micros_since(clock);

  const std::vector<at::Tensor>& deferred = router_.deferred();
  PackedChunks& packed = router_.packed();
  outputs_.resize(deferred.size());
  views_.resize(deferred.size());
  std::vector<int64_t> to_device;
  std::map<c10::DeviceIndex, std::vector<int64_t>> from_device;  // by source device
  for (size_t i = 0; i < deferred.size(); ++i) {
    const at::Tensor& t = deferred[i];
    if (t.is_cpu()) {
      to_device.push_back(static_cast<int64_t>(i));
    } else {
      from_device[t.device().index()].push_back(static_cast<int64_t>(i));
    }
  }
  RouteContext ctx{options_,  target_, deferred,    outputs_, views_,
                   storages_, stats_,  completion_, streams_};
  // CPU leaves are deferred only for a CUDA target (for a CPU one they are returned as they are).
  // A split walk has submitted its chunks already; the event is still to record.
  if (!packed.chunks.empty() || !to_device.empty() || (split_ && pack_submitted_in_walk()))
    copy_host_to_device(ctx, packed, to_device);
  for (const auto& [source, leaves] : from_device) {
    if (target_.is_cpu()) {
      copy_device_to_host(ctx, source, leaves);
    } else {
      copy_device_to_device(ctx, source, leaves);
    }
  }
  stats_.submit_us = micros_since(clock);
  place_outputs();
  stats_.outputs_us = micros_since(clock);
  outputs_.clear();
  views_.clear();
  storages_.clear();
}

void CopyJob::place_outputs() {
  MTC_RANGE(outputs, "create outputs");
  const size_t n = router_.deferred().size();
  // CPU storages only: an alias of a CUDA block would hide it from record_stream.
  const int64_t parts =
      target_.is_cpu()
          ? std::min<int64_t>(static_cast<int64_t>(n) / kOutputsPerPart, pool_.size() + 1)
          : 1;
  if (parts < 2) {
    place_outputs(0, n, false);
    return;
  }
  pool_.parallel_for(parts, [&](int64_t p) {
    const std::optional<c10::InferenceMode> inference = inference_guard();
    place_outputs(n * static_cast<size_t>(p) / static_cast<size_t>(parts),
                  n * static_cast<size_t>(p + 1) / static_cast<size_t>(parts), true);
  });
}

void CopyJob::place_outputs(size_t begin, size_t end, bool own_storages) {
  const std::vector<at::Tensor>& deferred = router_.deferred();
  const std::vector<c10::IValue*>& slots = router_.slots();
  // Threads that made views of one StorageImpl at once would each move its reference count's
  // cache line to their core, at every view. A part's first view of a storage counts there; from
  // its second on, the part uses an alias of its own (chunks of one or two items, as a small
  // max_packed_chunk_bytes gives, then cost no alias).
  std::vector<c10::Storage> aliases(own_storages ? storages_.size() : 0);
  std::vector<uint8_t> seen(own_storages ? storages_.size() : 0);
  for (size_t i = begin; i < end; ++i) {
    const DeferredView& v = views_[i];
    if (v.storage < 0) {
      *slots[i] = std::move(outputs_[i]);
      continue;
    }
    const c10::Storage* storage = &storages_[v.storage];
    if (own_storages && std::exchange(seen[v.storage], uint8_t{1}) != 0) {
      c10::Storage& alias = aliases[v.storage];
      if (!alias) alias = make_alias_storage(*storage);
      storage = &alias;
    }
    *slots[i] = make_view(*storage, v.byte_offset, deferred[i]);
  }
}

void CopyJob::run() noexcept {
  MTC_RANGE(job, "copy job");
  const PoolScope scope(pool_);  // run by the caller too (run_if_unclaimed)
  const std::optional<c10::InferenceMode> inference = inference_guard();
  try {
    run_routes();
    state_.store(kSubmitted, std::memory_order_release);
  } catch (...) {
    error_ = std::current_exception();
    // Work queued before the failure may still read inputs or write staging: let it finish
    // before anything is released.
    sync_streams_noexcept();
    completion_.wait_noexcept();
    result_ = c10::IValue();
    outputs_.clear();
    state_.store(kFailed, std::memory_order_release);
  }
  state_.notify_all();
}

void CopyJob::sync_streams_noexcept() noexcept {
  for (const auto& s : streams_.all()) clear_cuda_error(cudaStreamSynchronize(s.stream()));
}

int CopyJob::wait_submitted(bool join) {
  int state = state_.load(std::memory_order_acquire);
  if (state != kPending) return state;
  // The worker usually finishes within tens of microseconds: spin first, then sleep. While
  // spinning, join the walk if it is split (once), or help with queued pool work.
  const PoolScope scope(pool_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
  while ((state = state_.load(std::memory_order_acquire)) == kPending &&
         std::chrono::steady_clock::now() < deadline) {
    if (join && walk_open_.load(std::memory_order_acquire)) {
      join = false;
      join_walk();
      continue;
    }
    if (pool_.try_run_one()) continue;
    cpu_relax();
  }
  while (state == kPending) {
    state_.wait(kPending, std::memory_order_acquire);
    state = state_.load(std::memory_order_acquire);
  }
  return state;
}

bool CopyJob::ready() {
  const int state = state_.load(std::memory_order_acquire);
  if (state == kPending) return false;
  if (state == kFailed) std::rethrow_exception(error_);
  const PoolScope scope(pool_);  // completion may run host copies on the pool
  std::lock_guard<std::mutex> lock(completion_mutex_);
  return completion_.query();
}

c10::IValue CopyJob::get() {
  wait();
  TORCH_CHECK(!taken_.load(std::memory_order_acquire),
              "mtc::CopyHandle::get(): the result was moved out by take_result()");
  return result_;
}

void CopyJob::wait() {
  wait_started();
  const PoolScope scope(pool_);  // completion may run host copies on the pool
  std::lock_guard<std::mutex> lock(completion_mutex_);
  // The inputs stay referenced until the job is destroyed (with its handle): releasing them
  // here would put hundreds of reference-count drops on the caller's critical path.
  completion_.wait();
}

c10::IValue CopyJob::take_result() {
  wait_started();
  TORCH_CHECK(!taken_.exchange(true, std::memory_order_acq_rel),
              "mtc::CopyHandle::take_result(): the result was moved out already");
  // Written by the thread that ran the job before it published kSubmitted.
  return std::move(result_);
}

void CopyJob::wait_started() {
  // Not started yet (the workers are asleep, or busy): rather than wait for one to wake up,
  // the caller runs the job itself. Its cache often still holds the input it just built.
  run_if_unclaimed();
  // Started by a worker: if its walk is split, walk some of the parts while waiting.
  if (wait_submitted(/*join=*/true) == kFailed) std::rethrow_exception(error_);
}

void CopyJob::wait_noexcept() noexcept {
  try {
    wait_submitted(/*join=*/false);
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(completion_mutex_);
  completion_.wait_noexcept();
}

}  // namespace mtc::detail
