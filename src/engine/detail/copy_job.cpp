#include "detail/copy_job.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "detail/cuda_check.h"
#include "detail/driver_warmup.h"
#include "detail/outputs.h"
#include "detail/worker_pool_set.h"
#include "mtc/nvtx.h"

namespace mtc::detail {

void CapturedStreams::add(c10::DeviceIndex device) {
  for (const auto& s : streams_)
    if (s.device_index() == device) return;
  streams_.push_back(c10::cuda::getCurrentCUDAStream(device));
}

c10::cuda::CUDAStream CapturedStreams::of(c10::DeviceIndex device) const {
  for (const auto& s : streams_)
    if (s.device_index() == device) return s;
  // start_copy captures every device's stream unless the process had no primary CUDA context
  // (copier.cpp): an input on a GPU then lives in a context made by other means.
  TORCH_CHECK(false, "mtc::start_copy: an input lives on cuda:", static_cast<int>(device),
              ", but this process had no primary CUDA context when the copy started");
}

CopyJob::CopyJob(c10::IValue input, c10::Device target, const CopyOptions& options,
                 CapturedStreams streams, WorkerPool& pool, std::shared_ptr<ReusableOutputs> reuse,
                 std::shared_ptr<RootFeed> feed)
    : input_(std::move(input)),
      target_(target),
      options_(options),
      streams_(std::move(streams)),
      pool_(pool),
      reuse_(std::move(reuse)),
      feed_(std::move(feed)),
      router_(target, options_, stats_, reuse_.get()) {}

CopyJob::~CopyJob() { wait_noexcept(); }

namespace {
double micros_since(std::chrono::steady_clock::time_point& since) {
  const auto now = std::chrono::steady_clock::now();
  const double us = micros_between(since, now);
  since = now;
  return us;
}
}  // namespace

void CopyJob::run_routes() {
  auto clock = created_;
  stats_.queued_us = micros_since(clock);
  const auto walk_start = clock;
  walk();
  stats_.traverse_us = micros_since(clock);
  if (feed_) {
    stats_.feed_sleeps = feed_->sleeps();
    // From the later of the last element's arrival and the walk's start: a job that started late
    // (busy workers) had its whole walk after the feeder.
    stats_.feed_tail_us = micros_between(std::max(walk_start, feed_->completed_at()), clock);
  }

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
  if (target_.is_cpu()) {
    // GPU leaves the walk packed: gathered now, a run of consecutive chunks of one source device
    // at a time; each source's stream then gets its completion event below.
    for (const PackedChunks::Chunk& chunk : packed.chunks) from_device[chunk.source];
    submit_packed_device_to_host(ctx, packed);
  }
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
  // What a later warm-up of these devices uses is made now, by their first copy, after its own
  // work; a copy between CPUs touches no device (driver_warmup.h).
  if (target_.is_cuda()) driver_warmup::prepare(target_.index());
  for (const auto& source : from_device) driver_warmup::prepare(source.first);
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
    // The views this part made, in the structure's order: each asks, when freed, for the lines
    // of the one kFreeAhead further on (outputs.h).
    if (i >= begin + kFreeAhead && views_[i - kFreeAhead].storage >= 0)
      chain_for_free(slots[i - kFreeAhead]->unsafeToTensorImpl(), slots[i]->unsafeToTensorImpl());
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

std::optional<c10::cuda::CUDAStream> CopyJob::stream_to_stash_for() const {
  if (!target_.is_cuda() || state_.load(std::memory_order_acquire) != kSubmitted) return {};
  return streams_.of(target_.index());
}

void CopyJob::sync_streams_noexcept() noexcept {
  for (const auto& s : streams_.all()) {
    // A device's default stream is the null handle, which means the current device's: switch.
    try {
      const c10::cuda::CUDAGuard guard(s.device_index());
      clear_cuda_error(cudaStreamSynchronize(s.stream()));
    } catch (...) {
    }
  }
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
  // Another thread in wait() holds the lock until the device is done: not ready yet, as far as
  // this call can tell without waiting.
  const std::unique_lock<std::mutex> lock(completion_mutex_, std::try_to_lock);
  return lock.owns_lock() && completion_.query();
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
