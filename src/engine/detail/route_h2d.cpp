#include "detail/cuda_check.h"
#include "detail/outputs.h"
#include "detail/pack_plan.h"
#include "detail/routes.h"
#include "detail/staging.h"
#include "mtc/nvtx.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>

namespace mtc::detail {
namespace {

constexpr int64_t kStagingAlignment = 256;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

void pack_host_to_device(RouteContext& ctx, const std::vector<PackCandidate>& candidates,
                         std::vector<int64_t>& singles, cudaStream_t stream) {
  PackPlan plan;
  std::vector<int64_t> chunk_offsets;
  int64_t staging_bytes = 0;
  {
    MTC_RANGE(plan_range, "plan");
    plan = plan_packing(candidates, ctx.options.min_packed_alignment_bytes,
                        ctx.options.max_packed_chunk_bytes);
    singles.insert(singles.end(), plan.too_large.begin(), plan.too_large.end());
    chunk_offsets.reserve(plan.chunks.size());
    for (const PackChunk& c : plan.chunks) {
      chunk_offsets.push_back(staging_bytes);
      staging_bytes += round_up(c.bytes, kStagingAlignment);
    }
  }
  if (plan.chunks.empty()) return;

  std::byte* host = nullptr;
  if (ctx.options.use_pinned_staging) {
    PinnedBlock block = PinnedPool::instance().acquire(staging_bytes);
    ctx.completion.hold(block);
    host = block.data;
    ctx.stats.pinned_bytes += block.bytes;
  } else {
    at::Tensor buffer = at::empty({staging_bytes}, at::TensorOptions().dtype(at::kByte));
    ctx.completion.hold(buffer);
    host = static_cast<std::byte*>(buffer.data_ptr());
  }
  fill_packed(plan, chunk_offsets, ctx.inputs, host);

  const int64_t alignment = chunk_base_alignment(ctx.options.min_packed_alignment_bytes);
  const int64_t slack = chunk_slack(alignment, kDeviceAllocAlignment);
  std::vector<int32_t> storages;
  std::vector<int64_t> shifts;
  storages.reserve(plan.chunks.size());
  shifts.reserve(plan.chunks.size());
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    const int64_t bytes = plan.chunks[c].bytes;
    c10::DataPtr data;
    {
      MTC_RANGE(allocate, "allocate");
      data = c10::cuda::CUDACachingAllocator::get()->allocate(static_cast<size_t>(bytes + slack));
    }
    const int64_t shift = alignment_shift(data.get(), alignment);
    {
      MTC_RANGE(submit, "submit");
      MTC_CUDA_CHECK(cudaMemcpyAsync(static_cast<std::byte*>(data.get()) + shift, host + chunk_offsets[c],
                                     static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream));
    }
    storages.push_back(ctx.add_storage(make_storage(std::move(data), bytes + slack)));
    shifts.push_back(shift);
  }
  for (const PackItem& item : plan.items)
    ctx.views[item.leaf] = {storages[item.chunk], shifts[item.chunk] + item.offset};
  ctx.stats.packed += static_cast<int64_t>(plan.items.size());
  ctx.stats.chunks += static_cast<int64_t>(plan.chunks.size());
}

void single_host_to_device(RouteContext& ctx, int64_t leaf, PinnedPipeline& pipeline,
                           cudaStream_t stream) {
  const at::Tensor& input = ctx.inputs[leaf];
  // Dense layouts (contiguous or permuted) copy as one span and keep their strides, as .to()
  // does; anything else is made contiguous on the host first.
  const at::Tensor source = input.is_non_overlapping_and_dense() ? input : input.contiguous();
  at::Tensor out;
  {
    MTC_RANGE(allocate, "allocate");
    out = at::empty_strided(source.sizes(), source.strides(),
                            source.options().device(ctx.target));
  }
  const int64_t bytes = static_cast<int64_t>(source.nbytes());
  auto* dst = static_cast<std::byte*>(out.data_ptr());
  const auto* src = static_cast<const std::byte*>(source.const_data_ptr());
  if (ctx.options.use_pinned_staging && !source.is_pinned()) {
    pipeline.host_to_device(dst, src, bytes);
  } else {
    // Pinned sources need no staging. From pageable memory the driver stages the bytes itself
    // and returns once the source may be reused.
    MTC_RANGE(submit, "submit");
    MTC_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream));
    if (source.is_pinned()) ctx.completion.hold(source);
  }
  // From `source`: contiguous() has already resolved the bits of a non-dense input.
  copy_math_bits(source, out);
  ctx.outputs[leaf] = std::move(out);
  ++ctx.stats.per_tensor;
}

}  // namespace

void copy_host_to_device(RouteContext& ctx, std::span<const int64_t> leaves) {
  const c10::DeviceIndex device = ctx.target.index();
  const c10::cuda::CUDAStream stream = ctx.streams.of(device);
  // Allocations below are associated with the captured stream, as .to() on it would be.
  c10::cuda::CUDAStreamGuard guard(stream);

  std::vector<PackCandidate> candidates;
  std::vector<int64_t> singles;
  candidates.reserve(leaves.size());
  for (const int64_t leaf : leaves) {
    const at::Tensor& t = ctx.inputs[leaf];
    const auto bytes = static_cast<int64_t>(t.nbytes());
    if (bytes == 0) {
      ctx.outputs[leaf] = at::empty_strided(t.sizes(), t.strides(), t.options().device(ctx.target));
      copy_math_bits(t, ctx.outputs[leaf]);
      ++ctx.stats.per_tensor;
    } else if (ctx.options.pack_cpu_tensors && t.is_contiguous() && is_packable_size(bytes)) {
      candidates.push_back({leaf, bytes, static_cast<int64_t>(t.element_size())});
    } else {
      singles.push_back(leaf);
    }
  }
  if (!candidates.empty()) pack_host_to_device(ctx, candidates, singles, stream.stream());
  if (!singles.empty()) {
    PinnedPipeline pipeline(ctx.completion, device, stream.stream());
    for (const int64_t leaf : singles) single_host_to_device(ctx, leaf, pipeline, stream.stream());
    ctx.stats.pinned_bytes += pipeline.pinned_bytes();
    pipeline.drain();
  }
  ctx.completion.record(device, stream.stream());
}

}  // namespace mtc::detail
