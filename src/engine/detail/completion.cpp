#include "detail/completion.h"

#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "detail/cuda_check.h"
#include "detail/event_pool.h"
#include "detail/staging.h"
#include "mtc/nvtx.h"

namespace mtc::detail {

Completion::~Completion() { wait_noexcept(); }

void Completion::absorb(Completion& other) {
  // Room first, for all five: a failure part way would leave part of `other` behind, and staging
  // given back by its destructor before the DMAs that read it have run.
  auto make_room = [](auto& to, const auto& from) { to.reserve(to.size() + from.size()); };
  make_room(events_, other.events_);
  make_room(staging_, other.staging_);
  make_room(tensors_, other.tensors_);
  make_room(storages_, other.storages_);
  make_room(host_copies_, other.host_copies_);
  auto append = [](auto& to, auto& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
    from.clear();
  };
  append(events_, other.events_);
  append(staging_, other.staging_);
  append(tensors_, other.tensors_);
  append(storages_, other.storages_);
  append(host_copies_, other.host_copies_);
}

void Completion::hold(PinnedBlock block) {
  try {
    staging_.push_back(block);
  } catch (...) {
    // Dropped here, the block would count as in use for the life of the process.
    PinnedPool::give_back(block);
    throw;
  }
}

void Completion::record(c10::DeviceIndex device, cudaStream_t stream) {
  // Room first: an event taken from the pool and then not held would never go back to it.
  if (events_.size() == events_.capacity())
    events_.reserve(std::max<size_t>(4, 2 * events_.size()));
  cudaEvent_t event = EventPool::instance().acquire(device);
  events_.push_back({device, event});
  MTC_CUDA_CHECK(cudaEventRecord(event, stream));
}

bool Completion::query() {
  if (finished_) return true;
  for (const Event& e : events_) {
    bool done = false;
    MTC_CUDA_POLL(cuda_event_query(e.event, done));
    if (!done) return false;
  }
  finish();
  return true;
}

void Completion::wait() {
  if (finished_) return;
  {
    MTC_RANGE(wait, "wait");
    for (const Event& e : events_) MTC_CUDA_CHECK(cudaEventSynchronize(e.event));
  }
  finish();
}

void Completion::finish() {
  // All at once, split across the pool when large (device-to-host copies of large tensors).
  run_host_copies(host_copies_);
  host_copies_.clear();
  release_noexcept();
  finished_ = true;
}

void Completion::wait_noexcept() noexcept {
  if (finished_) return;
  for (const Event& e : events_) clear_cuda_error(cudaEventSynchronize(e.event));
  release_noexcept();
  finished_ = true;
}

void Completion::release_noexcept() noexcept {
  for (const PinnedBlock& b : staging_) PinnedPool::give_back(b);
  staging_.clear();
  for (const Event& e : events_) EventPool::instance().release(e.device, e.event);
  events_.clear();
  tensors_.clear();
  storages_.clear();
}

}  // namespace mtc::detail
