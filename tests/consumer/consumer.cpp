// Copies a small nested structure with the installed engine and checks the result: to the GPU
// when there is one, CPU to CPU otherwise. Exit code 0 when the copy is right. It also opens an
// NVTX range of its own, which must stay on whether the engine's are compiled out or not, and
// one in the engine's domain through mtc/nvtx.h, which compiles either way.
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <c10/cuda/CUDAFunctions.h>
#include <mtc/copier.h>
#include <mtc/nvtx.h>

#include <iostream>
#include <nvtx3/nvtx3.hpp>

// -DMTC_ENABLE_NVTX=OFF compiles out the engine's ranges only: NVTX_DISABLE, which would also
// compile out this program's, must not come with mtc::copier. Checked against such a build with
// MTC_BUILD_DIR=build-nonvtx scripts/test-consumer.sh.
#ifdef NVTX_DISABLE
#error "linking mtc::copier compiled out this program's own NVTX ranges (NVTX_DISABLE)"
#endif

int main() {
  const nvtx3::scoped_range range{"consumer"};
  MTC_RANGE(copy, "consumer copy");
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
  std::cout << "consumer: copied " << batch.size() << " tensors to " << target
            << " with mtc::copier"
#ifdef MTC_NVTX_DISABLE
            << " (the engine's NVTX ranges compiled out, this program's on)"
#endif
            << "\n";
  return 0;
}
