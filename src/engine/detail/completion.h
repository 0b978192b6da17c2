// Everything a copy must wait for, and everything it holds until then: the events recorded
// after its last device work on each stream, the pinned staging it borrowed, and the host
// copies (pinned staging -> pageable outputs) that can run only once the DMA has landed.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "detail/pinned_pool.h"

namespace mtc::detail {

// A host copy: pinned staging to a pageable output once the DMA into the staging has landed.
struct HostCopy {
  std::byte* dst;
  const std::byte* src;
  int64_t bytes;
};

class Completion {
 public:
  Completion() = default;
  Completion(const Completion&) = delete;  // owns events and staging
  Completion& operator=(const Completion&) = delete;
  ~Completion();

  // Records an event on `stream` (whose device must be current) after the work queued so far.
  void record(c10::DeviceIndex device, cudaStream_t stream);
  // Holds `block` until the copy has completed. Called as soon as the block is taken from its
  // pool, before any work is queued on it: a block there is no room to hold (std::bad_alloc) goes
  // straight back to its pool, which is right only while nothing reads or writes it yet.
  void hold(PinnedBlock block);
  void hold(at::Tensor tensor) { tensors_.push_back(std::move(tensor)); }
  // Host memory that a DMA or a pending host copy writes: a result dropped before the copy
  // has completed must not give it back for reuse until then.
  void hold(c10::Storage storage) { storages_.push_back(std::move(storage)); }
  void copy_after(std::byte* dst, const std::byte* src, int64_t bytes) {
    host_copies_.push_back({dst, src, bytes});
  }

  // Takes over everything `other` waits for and holds (a part of the same copy, built on
  // another thread).
  void absorb(Completion& other);

  // Non-blocking; true once every event has fired (then finishes like wait()).
  bool query();
  // Blocks until every event has fired, runs the pending host copies, releases staging.
  void wait();
  // For destructors and failure paths: waits, then releases; swallows errors.
  void wait_noexcept() noexcept;

 private:
  struct Event {
    c10::DeviceIndex device;
    cudaEvent_t event;
  };
  void finish();
  void release_noexcept() noexcept;

  std::vector<Event> events_;
  std::vector<PinnedBlock> staging_;
  std::vector<at::Tensor> tensors_;
  std::vector<c10::Storage> storages_;
  std::vector<HostCopy> host_copies_;
  bool finished_ = false;
};

}  // namespace mtc::detail
