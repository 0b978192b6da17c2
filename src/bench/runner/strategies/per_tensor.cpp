#include "runner/strategies/per_tensor.h"

#include <c10/cuda/CUDAStream.h>

#include "runner/strategies/structure.h"

namespace mtc::bench {
namespace {

at::Tensor copy_to(const at::Tensor& t, c10::Device target, bool non_blocking) {
  return t.to(at::TensorOptions().device(target), non_blocking);
}

}  // namespace

void synchronize_current_streams(const Route& route) {
  if (route.source.is_cuda()) c10::cuda::getCurrentCUDAStream(route.source.index()).synchronize();
  if (route.target.is_cuda() && route.target != route.source) {
    c10::cuda::getCurrentCUDAStream(route.target.index()).synchronize();
  }
}

void ToStrategy::start(const c10::IValue& input) {
  const c10::Device target = route_->target;
  output_ = map_tensors(input, [target](const at::Tensor& t) { return copy_to(t, target, false); });
}

c10::IValue PerTensorStrategy::finish() {
  if (non_blocking_) synchronize_current_streams(*route_);
  return std::exchange(output_, c10::IValue());
}

void ToNonBlockingStrategy::start(const c10::IValue& input) {
  const c10::Device target = route_->target;
  output_ = map_tensors(input, [target](const at::Tensor& t) { return copy_to(t, target, true); });
}

void PinToNonBlockingStrategy::start(const c10::IValue& input) {
  const c10::Device target = route_->target;
  output_ = map_tensors(input, [target](const at::Tensor& t) {
    return copy_to(t.is_cpu() ? t.pin_memory() : t, target, true);
  });
}

}  // namespace mtc::bench
