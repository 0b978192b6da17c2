#include "detail/copy_job.h"

#include "detail/outputs.h"
#include "detail/structure.h"
#include "detail/worker_pool.h"
#include "mtc/nvtx.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <map>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

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
                 CapturedStreams streams)
    : input_(std::move(input)),
      target_(target),
      options_(options),
      streams_(std::move(streams)),
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

void CopyJob::walk() {
  MTC_RANGE(traverse, "traverse");
  using Copier = StructureCopier<LeafRouter>;
  if (!Copier::is_container(input_)) {
    Copier(router_).copy(input_, result_);
    return;
  }
  // The root's elements are copied one by one and the root assembled around them. The first
  // element tells how large the structure probably is; a large one is split into groups of
  // consecutive elements, each group walked by its own router (its own chunks, so threads do
  // not share a storage's reference count) on the pool.
  const std::vector<const c10::IValue*> elements = Copier::elements_of(input_);
  const size_t n = elements.size();
  std::vector<c10::IValue> built(n);
  Copier first(router_);
  if (n > 0) built[0] = first.copy_element(*elements[0], 0);
  WorkerPool& pool = WorkerPool::instance();
  const int64_t estimate = stats_.tensors * static_cast<int64_t>(n);
  const auto parts = std::min<int64_t>({static_cast<int64_t>(pool.size()) + 1, static_cast<int64_t>(n) - 1, estimate / leaves_per_part.load(std::memory_order_relaxed)});
  if (parts < 2 || estimate < parallel_walk_leaves.load(std::memory_order_relaxed)) {
    for (size_t i = 1; i < n; ++i) built[i] = first.copy_element(*elements[i], static_cast<uint32_t>(i));
    result_ = Copier::assemble(input_, built);
    first.place_elements(result_);
    return;
  }
  // Each part also stages and submits its own chunks as soon as its walk is done, so the
  // submissions overlap the other parts' walks. Part 0 continues with router_ (and `first`);
  // the others have their own, each on cache lines of its own: routers write their counts and
  // vectors at every leaf, and neighbours sharing a line would slow each other down.
  struct NoLeaves {  // submissions route no single leaf
    std::vector<at::Tensor> inputs, outputs;
    std::vector<DeferredView> views;
    std::vector<c10::Storage> storages;
  } none;
  struct alignas(128) Part {
    Part(CopyJob& job, NoLeaves& no, LeafRouter* router_to_use, CopyStats* stats_to_use)
        : own_router(job.target_, job.options_, own_stats),
          router(router_to_use ? *router_to_use : own_router),
          copier(router),
          context{job.options_, job.target_, no.inputs, no.outputs, no.views, no.storages,
                  stats_to_use ? *stats_to_use : own_stats, completion, job.streams_} {}
    CopyStats own_stats;
    LeafRouter own_router;
    LeafRouter& router;
    Copier copier;
    Completion completion;  // what the part's submission holds
    RouteContext context;
  };
  std::vector<std::unique_ptr<Part>> part;
  for (int64_t p = 0; p < parts; ++p)
    part.push_back(std::make_unique<Part>(*this, none, p == 0 ? &router_ : nullptr, p == 0 ? &stats_ : nullptr));
  // Elements [1, n) in `parts` consecutive groups.
  const size_t rest = n - 1;
  auto group_start = [&](int64_t p) { return 1 + rest * static_cast<size_t>(p) / static_cast<size_t>(parts); };
  auto keep_staging = [&] {
    for (const auto& q : part) completion_.absorb(q->completion);
  };
  // A failing part records its error and stops; the others go on. The error reported is the
  // one of the earliest part, whichever failed first in time, so it does not vary from run to
  // run (within a part, the walk stops at its first bad leaf).
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  pool.parallel_for(parts, [&](int64_t p) {
    Part& q = *part[static_cast<size_t>(p)];
    const std::optional<c10::InferenceMode> inference = inference_guard();
    try {
      // Part 0 goes on with `first`, which holds element 0's deferred root entries.
      Copier& copier = p == 0 ? first : q.copier;
      for (size_t i = group_start(p); i < group_start(p + 1); ++i) {
        q.router.begin_element(static_cast<int64_t>(i));
        built[i] = copier.copy_element(*elements[i], static_cast<uint32_t>(i));
      }
      if (pack_submitted_in_walk()) submit_packed_host_to_device(q.context, q.router.packed());
    } catch (...) {
      errors[static_cast<size_t>(p)] = std::current_exception();
    }
  });
  // Parts that did submit hold staging their DMAs may still read: it goes to the job's
  // completion, which the failure path waits for after synchronizing the streams.
  keep_staging();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  result_ = Copier::assemble(input_, built);
  first.place_elements(result_);
  for (int64_t p = 1; p < parts; ++p) part[static_cast<size_t>(p)]->copier.place_elements(result_);
  for (int64_t p = 1; p < parts; ++p) router_.absorb(part[static_cast<size_t>(p)]->router);
  split_ = true;
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
  RouteContext ctx{options_, target_, deferred, outputs_,    views_,
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
  const std::vector<at::Tensor>& deferred = router_.deferred();
  const std::vector<c10::IValue*>& slots = router_.slots();
  for (size_t i = 0; i < deferred.size(); ++i) {
    const DeferredView& v = views_[i];
    if (v.storage >= 0) {
      *slots[i] = make_view(storages_[v.storage], v.byte_offset, deferred[i]);
    } else {
      *slots[i] = std::move(outputs_[i]);
    }
  }
}

void CopyJob::run() noexcept {
  MTC_RANGE(job, "copy job");
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
  for (const auto& s : streams_.all()) (void)cudaStreamSynchronize(s.stream());
}

int CopyJob::wait_submitted() const {
  int state = state_.load(std::memory_order_acquire);
  if (state != kPending) return state;
  // The worker usually finishes within tens of microseconds: spin first, then sleep. While
  // spinning, help with queued pool work (often the parts of this very copy).
  WorkerPool& pool = WorkerPool::instance();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
  while ((state = state_.load(std::memory_order_acquire)) == kPending &&
         std::chrono::steady_clock::now() < deadline) {
    if (pool.try_run_one()) continue;
#if defined(__x86_64__) || defined(_M_X64)
    _mm_pause();
#endif
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
  std::lock_guard<std::mutex> lock(completion_mutex_);
  return completion_.query();
}

c10::IValue CopyJob::get() {
  // Not started yet (the workers are asleep, or busy): rather than wait for one to wake up,
  // the caller runs the job itself. Its cache often still holds the input it just built.
  run_if_unclaimed();
  if (wait_submitted() == kFailed) std::rethrow_exception(error_);
  std::lock_guard<std::mutex> lock(completion_mutex_);
  // The inputs stay referenced until the job is destroyed (with its handle): releasing them
  // here would put hundreds of reference-count drops on the caller's critical path.
  completion_.wait();
  return result_;
}

void CopyJob::wait_noexcept() noexcept {
  try {
    wait_submitted();
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(completion_mutex_);
  completion_.wait_noexcept();
}

}  // namespace mtc::detail
