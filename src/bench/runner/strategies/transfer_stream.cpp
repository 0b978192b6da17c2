#include "runner/strategies/transfer_stream.h"

#include <c10/cuda/CUDAGuard.h>

#include "runner/strategies/structure.h"

namespace mtc::bench {

void TransferStreamStrategy::prepare(const Route& route) {
  route_ = route;
  const c10::Device driver = route.target.is_cuda() ? route.target : route.source;
  transfer_ = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, driver.index());
}

void TransferStreamStrategy::start(const c10::IValue& input) {
  const Route& route = *route_;
  if (route.source.is_cuda()) {
    input_ready_.record(c10::cuda::getCurrentCUDAStream(route.source.index()));
    input_ready_.block(*transfer_);
  }
  const bool to_cuda = route.target.is_cuda();
  const c10::cuda::CUDAStream consumer =
      to_cuda ? c10::cuda::getCurrentCUDAStream(route.target.index()) : *transfer_;
  {
    c10::cuda::CUDAStreamGuard on_transfer(*transfer_);
    output_ = map_tensors(input, [&](const at::Tensor& t) {
      at::Tensor out = t.to(at::TensorOptions().device(route.target), /*non_blocking=*/to_cuda);
      // Allocated on the transfer stream, used on the consumer's: without this the caching
      // allocator could hand the block to the transfer stream's next copy too early.
      if (to_cuda) out.record_stream(consumer);
      return out;
    });
  }
  if (to_cuda) {
    copies_done_.record(*transfer_);
    copies_done_.block(consumer);
  }
}

c10::IValue TransferStreamStrategy::finish() {
  if (route_->target.is_cuda()) {
    c10::cuda::getCurrentCUDAStream(route_->target.index()).synchronize();
  }
  return std::exchange(output_, c10::IValue());
}

}  // namespace mtc::bench
