// Copies a small nested structure with the installed engine and checks the result: to the GPU
// when there is one, CPU to CPU otherwise. Exit code 0 when the copy is right.
#include <mtc/copier.h>

#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <c10/cuda/CUDAFunctions.h>

#include <iostream>

int main() {
  c10::impl::GenericList batch(c10::AnyType::get());
  batch.push_back(at::arange(12, at::kFloat));
  batch.push_back(at::arange(5, at::kLong));
  const bool gpu = c10::cuda::device_count() > 0;
  const c10::Device target = gpu ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  mtc::CopyHandle handle = mtc::start_copy(c10::IValue(batch), target);
  const c10::impl::GenericList out = handle.get().toList();
  for (size_t i = 0; i < batch.size(); ++i) {
    const at::Tensor copy = out.get(i).toTensor();
    if (copy.device() != target || !at::allclose(copy.cpu(), batch.get(i).toTensor())) {
      std::cerr << "consumer: leaf " << i << " differs\n";
      return 1;
    }
  }
  std::cout << "consumer: copied " << batch.size() << " tensors to " << target << " with mtc::copier\n";
  return 0;
}
