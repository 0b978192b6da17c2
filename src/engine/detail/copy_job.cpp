#include "detail/copy_job.h"

#include "detail/outputs.h"
#include "detail/worker_pool.h"
#include "mtc/nvtx.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <chrono>
#include <map>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace mtc::detail {
namespace {
// Below this many leaves, splitting output creation and rebuild across workers does not pay:
// on the H200 hosts 528 leaves took as long split five ways as on one thread (the threads
// contend on shared reference counts, such as TensorType's, and on the allocator). Above it
// the evidence is mixed (results/NOTES.md): whole 4,224-leaf copies were faster with the split
// than the first serial engine, the rebuild alone in two parts was not.
constexpr size_t kParallelBuildLeaves = 1024;
}  // namespace

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
    : input_(std::move(input)), target_(target), options_(options), streams_(std::move(streams)) {}

CopyJob::~CopyJob() { wait_noexcept(); }

namespace {
double micros_since(std::chrono::steady_clock::time_point& since) {
  const auto now = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(now - since).count();
  since = now;
  return us;
}
}  // namespace

void CopyJob::run_routes() {
  auto clock = created_;
  stats_.queued_us = micros_since(clock);
  {
    MTC_RANGE(traverse, "traverse");
    flat_ = flatten(input_);
    input_ = c10::IValue();
  }
  stats_.traverse_us = micros_since(clock);
  std::vector<at::Tensor>& inputs = flat_.leaves;
  // The outputs will be built in parts: get sleeping workers spinning now, so they are awake
  // by the time the parts are queued, after the routes.
  if (inputs.size() >= kParallelBuildLeaves) WorkerPool::instance().wake_all();
  std::vector<at::Tensor>& outputs = outputs_;
  outputs.resize(inputs.size());
  views_.resize(inputs.size());
  std::vector<int64_t> to_device;
  std::map<c10::DeviceIndex, std::vector<int64_t>> from_device;  // by source device
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    if (t.defined()) {
      TORCH_CHECK(t.layout() == c10::kStrided, "mtc: tensor leaf ", i, " has layout ", t.layout(),
                  "; only strided tensors can be copied");
      TORCH_CHECK(t.is_cpu() || t.is_cuda(), "mtc: tensor leaf ", i, " is on ", t.device().str(),
                  "; only cpu and cuda tensors can be copied");
    }
    if (!t.defined() || t.device() == target_) {
      outputs[i] = t;
      ++stats_.reused;
    } else if (t.is_cpu()) {
      to_device.push_back(static_cast<int64_t>(i));
    } else {
      from_device[t.device().index()].push_back(static_cast<int64_t>(i));
    }
    if (t.defined()) stats_.bytes += static_cast<int64_t>(t.nbytes());
  }
  stats_.tensors = static_cast<int64_t>(inputs.size());

  RouteContext ctx{options_, target_, inputs,   outputs,     views_,
                   storages_, stats_, completion_, streams_};
  if (!to_device.empty()) copy_host_to_device(ctx, to_device);
  for (const auto& [source, leaves] : from_device) {
    if (target_.is_cpu()) {
      copy_device_to_host(ctx, source, leaves);
    } else {
      copy_device_to_device(ctx, source, leaves);
    }
  }
  stats_.submit_us = micros_since(clock);
  build_result();
  stats_.outputs_us = micros_since(clock);
  flat_.skeleton.clear();
  outputs.clear();
  views_.clear();
  storages_.clear();
}

void CopyJob::build_result() {
  MTC_RANGE(outputs, "create outputs");
  const Skeleton& skeleton = flat_.skeleton;
  const std::vector<at::Tensor>& inputs = flat_.leaves;
  auto materialize = [&](size_t first, size_t last) {
    for (size_t i = first; i < last; ++i) {
      const DeferredView& v = views_[i];
      if (v.storage >= 0) outputs_[i] = make_view(storages_[v.storage], v.byte_offset, inputs[i]);
    }
  };
  WorkerPool& pool = WorkerPool::instance();
  const size_t children = skeleton.root_children.size();
  const size_t parts = std::min<size_t>(pool.size() + 1, children);
  if (inputs.size() < kParallelBuildLeaves || parts < 2) {
    materialize(0, inputs.size());
    result_ = rebuild(skeleton, outputs_);
    return;
  }
  // Groups of consecutive root children holding about the same number of leaves.
  std::vector<size_t> bounds{0};
  for (size_t c = 1; c < children && bounds.size() < parts; ++c) {
    if (skeleton.root_children[c].leaf * parts >= inputs.size() * bounds.size()) bounds.push_back(c);
  }
  bounds.push_back(children);
  std::vector<c10::IValue> built(children);
  auto leaf_of = [&](size_t child) {
    return child < children ? static_cast<size_t>(skeleton.root_children[child].leaf) : inputs.size();
  };
  pool.parallel_for(static_cast<int64_t>(bounds.size() - 1), [&](int64_t p) {
    materialize(leaf_of(bounds[p]), leaf_of(bounds[p + 1]));
    for (size_t c = bounds[p]; c < bounds[p + 1]; ++c) built[c] = rebuild_child(skeleton, outputs_, c);
  });
  result_ = assemble_root(skeleton, std::move(built));
}

void CopyJob::run() noexcept {
  MTC_RANGE(job, "copy job");
  try {
    run_routes();
    state_.store(kSubmitted, std::memory_order_release);
  } catch (...) {
    error_ = std::current_exception();
    // Work queued before the failure may still read inputs or write staging: let it finish
    // before anything is released.
    sync_streams_noexcept();
    completion_.wait_noexcept();
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
