#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include "detail/cuda_check.h"
#include "detail/event_pool.h"
#include "detail/gather.h"
#include "detail/outputs.h"
#include "detail/pack_plan.h"
#include "detail/routes.h"
#include "mtc/nvtx.h"

namespace mtc::detail {
namespace {

// Makes `waiter` wait for the work queued so far on `signaller` (of device `device`).
void order_after(c10::DeviceIndex device, cudaStream_t signaller, cudaStream_t waiter) {
  EventPool& events = EventPool::instance();
  cudaEvent_t event = events.acquire(device);
  MTC_CUDA_CHECK(cudaEventRecord(event, signaller));
  MTC_CUDA_CHECK(cudaStreamWaitEvent(waiter, event, 0));
  // A wait captures the event's state when it is queued, so the event may be reused now.
  events.release(device, event);
}

}  // namespace

void copy_device_to_device(RouteContext& ctx, c10::DeviceIndex source,
                           std::span<const int64_t> leaves) {
  const c10::DeviceIndex target = ctx.target.index();
  const c10::cuda::CUDAStream source_stream = ctx.streams.of(source);
  const c10::cuda::CUDAStream target_stream = ctx.streams.of(target);

  std::vector<PackCandidate> candidates;
  std::vector<int64_t> singles;
  for (const int64_t leaf : leaves) {
    const at::Tensor& t = ctx.inputs[leaf];
    const auto bytes = static_cast<int64_t>(t.nbytes());
    if (ctx.options.pack_cpu_tensors && t.is_contiguous() && is_packable_size(bytes)) {
      candidates.push_back({leaf, bytes, static_cast<int64_t>(t.element_size())});
    } else {
      singles.push_back(leaf);
    }
  }
  PackPlan plan;
  {
    MTC_RANGE(plan_range, "plan");
    plan = plan_packing(candidates, ctx.options.min_packed_alignment_bytes,
                        ctx.options.max_packed_chunk_bytes);
    singles.insert(singles.end(), plan.too_large.begin(), plan.too_large.end());
  }

  // Outputs are allocated on the target's stream; the copies run on the source's stream, which
  // first waits for the target stream so no block freed there is still in use.
  const int64_t alignment = chunk_base_alignment(ctx.options.min_packed_alignment_bytes);
  const int64_t slack = chunk_slack(alignment, kDeviceAllocAlignment);
  std::vector<int32_t> chunks;
  std::vector<int64_t> shifts;
  {
    MTC_RANGE(allocate, "allocate");
    c10::cuda::CUDAStreamGuard guard(target_stream);
    for (const PackChunk& chunk : plan.chunks) {
      c10::DataPtr data = c10::cuda::CUDACachingAllocator::get()->allocate(
          static_cast<size_t>(chunk.bytes + slack));
      shifts.push_back(alignment_shift(data.get(), alignment));
      chunks.push_back(ctx.add_storage(make_storage(std::move(data), chunk.bytes + slack)));
    }
    for (const int64_t leaf : singles) {
      // Dense layouts keep their strides (one span to copy); others arrive contiguous.
      const at::Tensor& input = ctx.inputs[leaf];
      const auto options = input.options().device(ctx.target);
      if (input.is_non_overlapping_and_dense()) {
        ctx.outputs[leaf] = at::empty_strided(input.sizes(), input.strides(), options);
        copy_math_bits(input, ctx.outputs[leaf]);
      } else {
        // contiguous() below resolves the conjugate and negative bits into the values.
        ctx.outputs[leaf] = at::empty(input.sizes(), options);
      }
    }
    order_after(target, target_stream.stream(), source_stream.stream());
  }
  {
    MTC_RANGE(submit, "submit");
    c10::cuda::CUDAStreamGuard guard(source_stream);
    std::vector<GatherItem> gather;
    for (size_t c = 0; c < plan.chunks.size(); ++c) {
      const PackChunk& chunk = plan.chunks[c];
      c10::DataPtr packed =
          c10::cuda::CUDACachingAllocator::get()->allocate(static_cast<size_t>(chunk.bytes));
      gather.clear();
      for (int64_t k = chunk.first_item; k < chunk.first_item + chunk.item_count; ++k) {
        const PackItem& item = plan.items[k];
        gather.push_back({ctx.inputs[item.leaf].const_data_ptr(),
                          static_cast<uint64_t>(item.offset), static_cast<uint64_t>(item.bytes)});
      }
      launch_gather(gather.data(), gather.size(), static_cast<std::byte*>(packed.get()),
                    source_stream.stream());
      auto* dst = static_cast<std::byte*>(ctx.storages[chunks[c]].mutable_data()) + shifts[c];
      MTC_CUDA_CHECK(cudaMemcpyPeerAsync(dst, target, packed.get(), source,
                                         static_cast<size_t>(chunk.bytes), source_stream.stream()));
    }
    for (const int64_t leaf : singles) {
      const at::Tensor& input = ctx.inputs[leaf];
      ++ctx.stats.per_tensor;
      if (input.nbytes() == 0) continue;
      // Non-dense sources are made contiguous on the source stream, after the wait above.
      const at::Tensor source_tensor =
          input.is_non_overlapping_and_dense() ? input : input.contiguous();
      MTC_CUDA_CHECK(cudaMemcpyPeerAsync(ctx.outputs[leaf].data_ptr(), target,
                                         source_tensor.const_data_ptr(), source,
                                         source_tensor.nbytes(), source_stream.stream()));
    }
    ctx.completion.record(source, source_stream.stream());
    // Later work on the target's current stream sees the data without a host wait.
    order_after(source, source_stream.stream(), target_stream.stream());
  }
  for (const PackItem& item : plan.items)
    ctx.views[item.leaf] = {chunks[item.chunk], shifts[item.chunk] + item.offset};
  ctx.stats.packed += static_cast<int64_t>(plan.items.size());
  ctx.stats.chunks += static_cast<int64_t>(plan.chunks.size());
}

}  // namespace mtc::detail
