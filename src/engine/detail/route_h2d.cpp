#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include "detail/cuda_check.h"
#include "detail/device_block_stash.h"
#include "detail/outputs.h"
#include "detail/pinned_pool_set.h"
#include "detail/pinned_upload.h"
#include "detail/round_up.h"
#include "detail/routes.h"
#include "detail/staging.h"
#include "mtc/nvtx.h"

namespace mtc::detail {
namespace {

// Copies the packed chunks' sources into staging taken for them (pinned unless the options say
// otherwise; the copy's completion holds it).
void stage_packed(RouteContext& ctx, PackedChunks& packed) {
  const int64_t staging_bytes = packed.staging_bytes();
  std::byte* host = nullptr;
  if (ctx.options.use_pinned_staging) {
    PinnedBlock block;
    {
      const AddElapsed timed(ctx.stats.allocate_us);
      block = PinnedPoolSet::instance().for_device(ctx.target.index()).acquire(staging_bytes);
    }
    ctx.completion.hold(block);
    host = block.data;
    ctx.stats.pinned_bytes += block.bytes;
  } else {
    at::Tensor buffer = at::empty({staging_bytes}, at::TensorOptions().dtype(at::kByte));
    ctx.completion.hold(buffer);
    host = static_cast<std::byte*>(buffer.data_ptr());
  }
  fill_staging(packed.copies, host);
  packed.staged = host;
}

// Gives each staged chunk its device memory and queues one DMA per chunk.
void queue_packed(RouteContext& ctx, PackedChunks& packed, const c10::cuda::CUDAStream& stream) {
  const std::byte* host = packed.staged;
  const int64_t alignment = chunk_base_alignment(ctx.options.min_packed_alignment_bytes);
  const int64_t slack = chunk_slack(alignment, kDeviceAllocAlignment);
  for (size_t c = 0; c < packed.chunks.size(); ++c) {
    PackedChunks::Chunk& chunk = packed.chunks[c];
    c10::DataPtr data;
    {
      MTC_RANGE(allocate, "allocate");
      const AddElapsed timed(ctx.stats.allocate_us);
      const auto bytes = static_cast<size_t>(chunk.bytes + slack);
      data = device_block_stash::take(stream, bytes);
      if (!data) data = c10::cuda::CUDACachingAllocator::get()->allocate(bytes);
    }
    const int64_t shift = alignment_shift(data.get(), alignment);
    {
      MTC_RANGE(submit, "submit");
      const AddElapsed timed(ctx.stats.driver_us);
      MTC_CUDA_CHECK(cudaMemcpyAsync(static_cast<std::byte*>(data.get()) + shift,
                                     host + chunk.staging, static_cast<size_t>(chunk.bytes),
                                     cudaMemcpyHostToDevice, stream.stream()));
    }
    if (shift != 0) {
      // Only for alignments the allocator's own does not cover: move the chunk's views along.
      // shift is a multiple of 16 (both alignments are), so of every element size.
      const size_t last =
          c + 1 < packed.chunks.size() ? packed.chunks[c + 1].first_item : packed.views.size();
      for (size_t k = chunk.first_item; k < last; ++k) {
        c10::TensorImpl* view = packed.views[k];
        view->set_storage_offset(view->storage_offset() +
                                 shift / static_cast<int64_t>(view->dtype().itemsize()));
      }
    }
    chunk.storage.set_data_ptr_noswap(std::move(data));
    chunk.storage.set_nbytes(static_cast<size_t>(chunk.bytes + slack));
  }
  ctx.stats.packed += static_cast<int64_t>(packed.views.size());
  ctx.stats.chunks += static_cast<int64_t>(packed.chunks.size());
}

// Allocates the output and queues the copy of a tensor that is not packed. Pageable sources
// staged through pinned memory are only collected in `pageable`, to be uploaded together;
// `temporaries` keeps contiguous copies of non-dense inputs alive until then.
void single_host_to_device(RouteContext& ctx, int64_t leaf, std::vector<HostToDeviceSpan>& pageable,
                           std::vector<at::Tensor>& temporaries, cudaStream_t stream) {
  const at::Tensor& input = ctx.inputs[leaf];
  // Dense layouts (contiguous or permuted) copy as one span and keep their strides, as .to()
  // does; anything else is made contiguous on the host first.
  const at::Tensor source = input.is_non_overlapping_and_dense() ? input : input.contiguous();
  at::Tensor out;
  {
    MTC_RANGE(allocate, "allocate");
    out = at::empty_strided(source.sizes(), source.strides(), source.options().device(ctx.target));
  }
  const int64_t bytes = static_cast<int64_t>(source.nbytes());
  auto* dst = static_cast<std::byte*>(out.data_ptr());
  const auto* src = static_cast<const std::byte*>(source.const_data_ptr());
  const bool pinned = source.is_pinned();
  if (ctx.options.use_pinned_staging && !pinned) {
    pageable.push_back({dst, src, bytes});
    if (!source.is_same(input)) temporaries.push_back(source);
  } else {
    // Pinned sources need no staging. From pageable memory the driver stages the bytes itself
    // and returns once the source may be reused.
    MTC_RANGE(submit, "submit");
    MTC_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream));
    if (pinned) ctx.completion.hold(source);
  }
  // From `source`: contiguous() has already resolved the bits of a non-dense input.
  copy_math_bits(source, out);
  ctx.outputs[leaf] = std::move(out);
  ++ctx.stats.per_tensor;
}

}  // namespace

void stage_packed_host_to_device(RouteContext& ctx, PackedChunks& packed) {
  if (!packed.chunks.empty() && packed.staged == nullptr) stage_packed(ctx, packed);
}

void queue_packed_host_to_device(RouteContext& ctx, PackedChunks& packed) {
  if (packed.chunks.empty()) return;
  TORCH_INTERNAL_ASSERT(packed.staged != nullptr, "queue_packed_host_to_device: not staged");
  const c10::cuda::CUDAStream stream = ctx.streams.of(ctx.target.index());
  c10::cuda::CUDAStreamGuard guard(stream);
  queue_packed(ctx, packed, stream);
  packed = PackedChunks();
}

void submit_packed_host_to_device(RouteContext& ctx, PackedChunks& packed) {
  stage_packed_host_to_device(ctx, packed);
  queue_packed_host_to_device(ctx, packed);
}

int64_t PackedChunks::staging_bytes() const {
  return chunks.empty() ? 0 : chunks.back().staging + chunks.back().bytes;
}

int64_t PackedChunks::next_chunk_staging() const {
  return round_up(staging_bytes(), kStagingAlignment);
}

void copy_host_to_device(RouteContext& ctx, PackedChunks& packed, std::span<const int64_t> leaves) {
  const c10::DeviceIndex device = ctx.target.index();
  const c10::cuda::CUDAStream stream = ctx.streams.of(device);
  // Allocations below are associated with the captured stream, as .to() on it would be.
  c10::cuda::CUDAStreamGuard guard(stream);
  submit_packed_host_to_device(ctx, packed);

  std::vector<HostToDeviceSpan> pageable;
  std::vector<at::Tensor> temporaries;
  for (const int64_t leaf : leaves) {
    const at::Tensor& t = ctx.inputs[leaf];
    if (t.nbytes() == 0) {
      ctx.outputs[leaf] = at::empty_strided(t.sizes(), t.strides(), t.options().device(ctx.target));
      copy_math_bits(t, ctx.outputs[leaf]);
      ++ctx.stats.per_tensor;
    } else {
      single_host_to_device(ctx, leaf, pageable, temporaries, stream.stream());
    }
  }
  // Returns once every host copy is done (the temporaries may go), the DMAs queued.
  if (!pageable.empty())
    ctx.stats.pinned_bytes += upload_pageable(pageable, ctx.completion, device, stream.stream());
  const AddElapsed timed(ctx.stats.driver_us);
  ctx.completion.record(device, stream.stream());
}

}  // namespace mtc::detail
