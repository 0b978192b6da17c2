// cudaMemcpyBatchAsync (CUDA >= 12.8): one driver call submits a copy per tensor into one
// allocation on the target; the outputs are views into it. The closest thing to packing that
// CUDA offers without a staging buffer, so a fair baseline for the engine.
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include <vector>

#include "runner/strategies/strategy.h"

namespace mtc::bench {

class MemcpyBatchStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "memcpy_batch"; }
  std::string unsupported_reason(const Route& route) const override;
  void prepare(const Route& route) override;
  void start(const c10::IValue& input) override;
  c10::IValue finish() override;

 private:
  // Where each leaf's bytes go: an offset into the batch buffer, or reuse (already on target).
  struct Slot {
    int64_t offset;     // -1: the leaf is returned as it is
    at::Tensor source;  // contiguous: the leaf itself or a copy that lives until finish()
  };

  std::optional<Route> route_;
  // The API refuses the legacy default stream; a pool stream of the driving device (the
  // target for h2d and d2d, the source for d2h) is what a user would pick.
  std::optional<c10::cuda::CUDAStream> stream_;
  at::cuda::CUDAEvent input_ready_;
  at::cuda::CUDAEvent copies_done_;
  // Reused across samples, as a user would, so only the copies themselves cost.
  std::vector<Slot> slots_;
  std::vector<void*> dsts_;
  std::vector<const void*> srcs_;
  std::vector<size_t> sizes_;
  at::Tensor buffer_;
  c10::IValue output_;
};

}  // namespace mtc::bench
