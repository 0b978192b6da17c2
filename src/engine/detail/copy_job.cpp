#include "detail/copy_job.h"

#include "mtc/nvtx.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <chrono>
#include <map>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace mtc::detail {

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

CopyJob::CopyJob(FlatStructure flat, c10::Device target, const CopyOptions& options,
                 CapturedStreams streams)
    : flat_(std::move(flat)), target_(target), options_(options), streams_(std::move(streams)) {}

CopyJob::~CopyJob() { wait_noexcept(); }

void CopyJob::run_routes() {
  std::vector<at::Tensor>& inputs = flat_.leaves;
  std::vector<at::Tensor>& outputs = outputs_;
  outputs.resize(inputs.size());
  std::vector<int64_t> to_device;
  std::map<c10::DeviceIndex, std::vector<int64_t>> from_device;  // by source device
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
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

  RouteContext ctx{options_, target_, inputs, outputs, stats_, completion_, streams_};
  if (!to_device.empty()) copy_host_to_device(ctx, to_device);
  for (const auto& [source, leaves] : from_device) {
    if (target_.is_cpu()) {
      copy_device_to_host(ctx, source, leaves);
    } else {
      copy_device_to_device(ctx, source, leaves);
    }
  }
  MTC_RANGE(rebuild, "rebuild structure");
  result_ = rebuild(flat_.skeleton, outputs);
  flat_.skeleton.clear();
  outputs.clear();
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
  // The worker usually finishes within tens of microseconds: spin first, then sleep.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
  while ((state = state_.load(std::memory_order_acquire)) == kPending &&
         std::chrono::steady_clock::now() < deadline) {
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
  if (!completion_.query()) return false;
  flat_.leaves.clear();
  return true;
}

c10::IValue CopyJob::get() {
  if (wait_submitted() == kFailed) std::rethrow_exception(error_);
  std::lock_guard<std::mutex> lock(completion_mutex_);
  completion_.wait();
  // The inputs were kept alive for the device work that reads them; it is done.
  flat_.leaves.clear();
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
