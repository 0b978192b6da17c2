// torchlinops' ToDevice, applied to every leaf: copies go on a dedicated transfer stream of
// the device pair instead of the current stream, ordered with events so the caller's stream
// neither waits for unrelated work nor reads early, and record_stream tells the caching
// allocator where the outputs are used. GPU->CPU copies block, as they do there.
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include "runner/strategies/strategy.h"

namespace mtc::bench {

class TransferStreamStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "transfer_stream"; }
  void prepare(const Route& route) override;
  void start(const c10::IValue& input) override;
  c10::IValue finish() override;

 private:
  std::optional<Route> route_;
  // A pool stream of the device that drives the copies: the target for h2d and d2d, the
  // source for d2h. Pool streams are owned by c10 and live for the process.
  std::optional<c10::cuda::CUDAStream> transfer_;
  // Input ready on the source's current stream -> transfer stream (d2h, d2d).
  at::cuda::CUDAEvent input_ready_;
  // Copies done on the transfer stream -> target's current stream (h2d, d2d).
  at::cuda::CUDAEvent copies_done_;
  c10::IValue output_;
};

}  // namespace mtc::bench
