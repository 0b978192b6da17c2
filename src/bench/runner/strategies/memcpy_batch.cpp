#include "runner/strategies/memcpy_batch.h"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include <algorithm>

#include "runner/strategies/structure.h"

namespace mtc::bench {
namespace {

constexpr int64_t kMinAlignment = 16;  // as the engine's default packing alignment

int64_t align_up(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

#if CUDART_VERSION >= 12080
void batch_copy(std::vector<void*>& dsts, std::vector<const void*>& srcs,
                std::vector<size_t>& sizes, cudaStream_t stream) {
  // Sources are read in stream order: they may be the output of work queued before the copy
  // (the input-ready event orders that). The faster "any order" setting is only valid when
  // nothing in flight can touch them, which a general-purpose copy cannot know.
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t first_copy = 0;
#if CUDART_VERSION >= 13000
  C10_CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), sizes.size(),
                                      &attributes, &first_copy, 1, stream));
#else
  // CUDA 12.8 and 12.9 take non-const arrays and report the failing index.
  size_t failed = 0;
  C10_CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), const_cast<void**>(srcs.data()), sizes.data(),
                                      sizes.size(), &attributes, &first_copy, 1, &failed, stream));
#endif
}
#endif

}  // namespace

std::string MemcpyBatchStrategy::unsupported_reason(const Route& /*route*/) const {
#if CUDART_VERSION >= 12080
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver < 12080) {
    return "needs a driver for CUDA >= 12.8";
  }
  return {};
#else
  return "built against a CUDA runtime older than 12.8";
#endif
}

void MemcpyBatchStrategy::prepare(const Route& route) {
  route_ = route;
  const c10::Device driver = route.target.is_cuda() ? route.target : route.source;
  stream_ = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, driver.index());
}

void MemcpyBatchStrategy::start(const c10::IValue& input) {
#if CUDART_VERSION >= 12080
  const Route& route = *route_;
  slots_.clear();
  dsts_.clear();
  srcs_.clear();
  sizes_.clear();

  int64_t total = 0;
  for_each_tensor(input, [&](const at::Tensor& t) {
    if (t.device() == route.target) {
      slots_.push_back({-1, at::Tensor()});
      return;
    }
    const int64_t offset = align_up(total, std::max<int64_t>(kMinAlignment, t.element_size()));
    slots_.push_back({offset, t.contiguous()});
    total = offset + static_cast<int64_t>(t.nbytes());
  });

  if (route.source.is_cuda()) {
    input_ready_.record(c10::cuda::getCurrentCUDAStream(route.source.index()));
    input_ready_.block(*stream_);
  }
  c10::cuda::CUDAStreamGuard on_stream(*stream_);
  const auto bytes = at::TensorOptions().dtype(at::kByte);
  buffer_ = route.target.is_cuda() ? at::empty({total}, bytes.device(route.target))
                                   : at::empty({total}, bytes.pinned_memory(true));
  auto* base = static_cast<char*>(buffer_.data_ptr());

  for (const Slot& slot : slots_) {
    if (slot.offset < 0 || slot.source.nbytes() == 0) continue;
    dsts_.push_back(base + slot.offset);
    srcs_.push_back(slot.source.const_data_ptr());
    sizes_.push_back(slot.source.nbytes());
  }
  if (!sizes_.empty()) batch_copy(dsts_, srcs_, sizes_, stream_->stream());

  if (route.target.is_cuda()) {
    const auto consumer = c10::cuda::getCurrentCUDAStream(route.target.index());
    copies_done_.record(*stream_);
    copies_done_.block(consumer);
    buffer_.record_stream(consumer);
  }

  size_t index = 0;
  output_ = map_tensors(input, [&](const at::Tensor& t) {
    const Slot& slot = slots_[index++];
    if (slot.offset < 0) return t;
    const auto options = t.options().device(buffer_.device());
    if (t.nbytes() == 0) return at::empty(t.sizes(), options);
    return at::empty({0}, options)
        .set_(buffer_.storage(), slot.offset / t.element_size(), t.sizes());
  });
#else
  (void)input;
  TORCH_CHECK(false, "memcpy_batch: built against a CUDA runtime older than 12.8");
#endif
}

c10::IValue MemcpyBatchStrategy::finish() {
  if (route_->target.is_cuda()) {
    c10::cuda::getCurrentCUDAStream(route_->target.index()).synchronize();
  } else {
    stream_->synchronize();
  }
  slots_.clear();  // drops the contiguous copies only now that the copies are done
  buffer_ = at::Tensor();
  return std::exchange(output_, c10::IValue());
}

}  // namespace mtc::bench
