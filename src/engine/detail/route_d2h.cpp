#include <ATen/EmptyTensor.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/ops/empty_strided.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "detail/cuda_check.h"
#include "detail/gather.h"
#include "detail/host_block_cache.h"
#include "detail/outputs.h"
#include "detail/pack_plan.h"
#include "detail/pinned_pool_set.h"
#include "detail/round_up.h"
#include "detail/routes.h"
#include "detail/staging.h"
#include "mtc/nvtx.h"

namespace mtc::detail {
namespace {

// Where a packed GPU->CPU chunk's host memory comes from: torch's pinned-memory cache with
// pinned_host_outputs (the DMA lands in it), the engine's pageable block cache otherwise.
c10::Allocator* packed_host_allocator(const CopyOptions& options) {
  if (options.pinned_host_outputs) return at::getHostAllocator(at::kCUDA);
  return &HostBlockCache::instance();
}

// Host memory for a packed chunk of `bytes` whose start must be a multiple of `alignment`, and in
// `shift` where in it the chunk starts. Asked for as `bytes` first, as the allocators' blocks are
// normally aligned enough (pages, 64 bytes); again with `alignment` more only when that one was
// not. Asking for the padding at once costs far more than it adds where a request is rounded up:
// torch's pinned cache rounds to a power of two, so a full 4 MiB chunk would take 8 MiB. The
// storage is resizable with its allocator, as a tensor's made by that allocator would be.
c10::Storage allocate_packed_host(const CopyOptions& options, int64_t bytes, int64_t alignment,
                                  int64_t& shift) {
  c10::Allocator* const allocator = packed_host_allocator(options);
  auto size = static_cast<size_t>(bytes);
  c10::DataPtr block = allocator->allocate(size);
  shift = alignment_shift(block.get(), alignment);
  if (shift != 0) {
    size += static_cast<size_t>(alignment);
    block = allocator->allocate(size);  // the first block goes back
    shift = alignment_shift(block.get(), alignment);
  }
  return c10::Storage(c10::Storage::use_byte_size_t(), size, std::move(block), allocator,
                      /*resizable=*/true);
}

// Gathers `items` on device `source` into `gathered` and brings those `bytes` to `host`, which
// lies in `host_memory`. Pinned host memory (pinned_host_outputs) takes the DMA itself. Otherwise
// through pinned staging and a host copy once the DMA has landed; without pinned staging,
// straight into the pageable memory, which the runtime does synchronously. Pinned staging also
// carries the descriptors for the gather to read (the copy holds the block until its event).
// The copy holds `host_memory` from before the DMA is queued: a failure to hold it must not free
// memory a queued DMA or host copy writes (pinned memory goes straight back to torch's cache).
void gather_to_host(RouteContext& ctx, c10::DeviceIndex source, cudaStream_t stream,
                    const std::vector<GatherItem>& items, std::byte* gathered, std::byte* host,
                    int64_t bytes, const c10::Storage& host_memory, bool host_pinned) {
  if (ctx.options.use_pinned_staging || host_pinned) ctx.completion.hold(host_memory);
  if (ctx.options.use_pinned_staging) {
    const auto descriptor_bytes =
        round_up(static_cast<int64_t>(items.size() * sizeof(GatherItem)), kStagingAlignment);
    PinnedBlock block;
    {
      const AddElapsed timed(ctx.stats.allocate_us);
      block = PinnedPoolSet::instance().for_device(source).acquire(descriptor_bytes +
                                                                   (host_pinned ? 0 : bytes));
    }
    ctx.completion.hold(block);
    ctx.stats.pinned_bytes += block.bytes;
    auto* descriptors = reinterpret_cast<GatherItem*>(block.data);
    std::copy(items.begin(), items.end(), descriptors);
    std::byte* landing = host_pinned ? host : block.data + descriptor_bytes;
    {
      const AddElapsed timed(ctx.stats.driver_us);
      launch_gather_pinned(descriptors, items.size(), gathered, stream);
      MTC_CUDA_CHECK(cudaMemcpyAsync(landing, gathered, static_cast<size_t>(bytes),
                                     cudaMemcpyDeviceToHost, stream));
    }
    if (!host_pinned) ctx.completion.copy_after(host, landing, bytes);
  } else {
    launch_gather(items.data(), items.size(), gathered, stream);
    // Into pageable memory the copy is synchronous: it returns once the bytes are there. Into
    // pinned memory it is not, and the copy holds the memory (above) until its event.
    MTC_CUDA_CHECK(cudaMemcpyAsync(host, gathered, static_cast<size_t>(bytes),
                                   cudaMemcpyDeviceToHost, stream));
  }
}

// Chunks [first, end) of `packed`, all from one device, gathered there into one buffer, brought
// over in one DMA and landing in one block of host memory, each chunk at the next multiple of
// `alignment`; each chunk's storage gets its part of the block (and keeps the block alive).
void submit_run(RouteContext& ctx, PackedChunks& packed, size_t first, size_t end,
                int64_t alignment) {
  const c10::DeviceIndex source = packed.chunks[first].source;
  const c10::cuda::CUDAStream stream = ctx.streams.of(source);
  // The device buffer is associated with the captured stream, as .to() on it would be.
  c10::cuda::CUDAStreamGuard guard(stream);
  const auto end_of = [&](size_t c) {
    return c + 1 < packed.chunks.size() ? packed.chunks[c + 1].first_item : packed.copies.size();
  };
  std::vector<int64_t> starts;  // by chunk of the run, from the run's start
  std::vector<GatherItem> gather;
  starts.reserve(end - first);
  gather.reserve(end_of(end - 1) - packed.chunks[first].first_item);
  int64_t bytes = 0;
  for (size_t c = first; c < end; ++c) {
    const PackedChunks::Chunk& chunk = packed.chunks[c];
    bytes = round_up(bytes, alignment);
    starts.push_back(bytes);
    // Items were placed from the chunk's staging offset; here the chunk starts at `bytes`.
    for (size_t k = chunk.first_item; k < end_of(c); ++k) {
      const StagingCopy& copy = packed.copies[k];
      gather.push_back({copy.src, static_cast<uint64_t>(bytes + copy.dst_offset - chunk.staging),
                        static_cast<uint64_t>(copy.bytes)});
    }
    bytes += chunk.bytes;
  }
  c10::DataPtr device_buffer;
  c10::Storage host_block;
  int64_t shift = 0;
  {
    MTC_RANGE(allocate, "allocate");
    const AddElapsed timed(ctx.stats.allocate_us);
    // Freed as soon as the DMA is queued: it is used on this stream only, and the caching
    // allocator reuses it in stream order.
    device_buffer = c10::cuda::CUDACachingAllocator::get()->allocate(static_cast<size_t>(bytes));
    host_block = allocate_packed_host(ctx.options, bytes, alignment, shift);
  }
  auto* host = static_cast<std::byte*>(host_block.mutable_data()) + shift;
  {
    MTC_RANGE(submit, "submit");
    gather_to_host(ctx, source, stream.stream(), gather,
                   static_cast<std::byte*>(device_buffer.get()), host, bytes, host_block,
                   ctx.options.pinned_host_outputs);
  }
  for (size_t c = first; c < end; ++c) {
    PackedChunks::Chunk& chunk = packed.chunks[c];
    auto owner = std::make_unique<c10::Storage>(host_block);
    c10::DataPtr part(
        host + starts[c - first], owner.get(),
        [](void* o) { delete static_cast<c10::Storage*>(o); }, c10::Device(c10::kCPU));
    owner.release();  // now the part's
    chunk.storage.set_data_ptr_noswap(std::move(part));
    chunk.storage.set_nbytes(static_cast<size_t>(chunk.bytes));
  }
}

// Small device tensors are gathered on the device into one buffer per chunk, which then
// crosses PCIe in one DMA and lands in a host chunk the outputs are views of: pinned with
// pinned_host_outputs (the DMA lands in it), pageable otherwise, as the walk's chunks are. Only
// for the leaves the walk did not pack: a second source device's.
void pack_device_to_host(RouteContext& ctx, const std::vector<PackCandidate>& candidates,
                         std::vector<int64_t>& singles, c10::DeviceIndex source,
                         cudaStream_t stream) {
  PackPlan plan;
  {
    MTC_RANGE(plan_range, "plan");
    plan = plan_packing(candidates, ctx.options.min_packed_alignment_bytes,
                        ctx.options.max_packed_chunk_bytes);
    singles.insert(singles.end(), plan.too_large.begin(), plan.too_large.end());
  }
  const int64_t alignment = chunk_base_alignment(ctx.options.min_packed_alignment_bytes);
  std::vector<GatherItem> gather;
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    const PackChunk& chunk = plan.chunks[c];
    c10::DataPtr device_buffer;
    c10::Storage host_block;
    int64_t shift = 0;
    {
      MTC_RANGE(allocate, "allocate");
      // Freed as soon as the DMA is queued: it is used on this stream only, and the caching
      // allocator reuses it in stream order.
      device_buffer =
          c10::cuda::CUDACachingAllocator::get()->allocate(static_cast<size_t>(chunk.bytes));
      host_block = allocate_packed_host(ctx.options, chunk.bytes, alignment, shift);
    }
    auto* host = static_cast<std::byte*>(host_block.mutable_data());
    {
      MTC_RANGE(submit, "submit");
      gather.clear();
      for (int64_t k = chunk.first_item; k < chunk.first_item + chunk.item_count; ++k) {
        const PackItem& item = plan.items[k];
        gather.push_back({ctx.inputs[item.leaf].const_data_ptr(),
                          static_cast<uint64_t>(item.offset), static_cast<uint64_t>(item.bytes)});
      }
      gather_to_host(ctx, source, stream, gather, static_cast<std::byte*>(device_buffer.get()),
                     host + shift, chunk.bytes, host_block, ctx.options.pinned_host_outputs);
    }
    const int32_t storage = ctx.add_storage(host_block);
    const int64_t base = shift;
    for (int64_t k = chunk.first_item; k < chunk.first_item + chunk.item_count; ++k) {
      const PackItem& item = plan.items[k];
      ctx.views[item.leaf] = {storage, base + item.offset};
    }
  }
  ctx.stats.packed += static_cast<int64_t>(plan.items.size());
  ctx.stats.chunks += static_cast<int64_t>(plan.chunks.size());
}

void single_device_to_host(RouteContext& ctx, int64_t leaf, PinnedPipeline& pipeline,
                           cudaStream_t stream) {
  const at::Tensor& input = ctx.inputs[leaf];
  // contiguous() runs on the captured (current) stream, ordered before the copy.
  const at::Tensor source = input.is_non_overlapping_and_dense() ? input : input.contiguous();
  const bool pinned_output = ctx.options.pinned_host_outputs;
  at::Tensor out;
  {
    MTC_RANGE(allocate, "allocate");
    // Pinned outputs come from torch's pinned-memory cache, pageable ones from the engine's.
    out = pinned_output ? at::empty_strided(source.sizes(), source.strides(),
                                            source.options().device(at::kCPU).pinned_memory(true))
                        : at::detail::empty_strided_generic(
                              source.sizes(), source.strides(), &HostBlockCache::instance(),
                              c10::DispatchKeySet(c10::DispatchKey::CPU), source.scalar_type());
  }
  const int64_t bytes = static_cast<int64_t>(source.nbytes());
  auto* dst = static_cast<std::byte*>(out.data_ptr());
  const auto* src = static_cast<const std::byte*>(source.const_data_ptr());
  // Written by a DMA or a host copy after get() may have handed the output over. Held before the
  // DMA is queued: a failure to hold it must not free a pinned output a queued DMA writes.
  if (pinned_output || ctx.options.use_pinned_staging) ctx.completion.hold(out.storage());
  if (pinned_output) {
    // The DMA lands in the output itself; nothing frees the output before get() has waited.
    MTC_RANGE(submit, "submit");
    MTC_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream));
  } else if (ctx.options.use_pinned_staging) {
    pipeline.device_to_host(dst, src, bytes);
  } else {
    MTC_RANGE(submit, "submit");
    MTC_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream));
  }
  // From `source`: contiguous() has already resolved the bits of a non-dense input.
  copy_math_bits(source, out);
  ctx.outputs[leaf] = std::move(out);
  ++ctx.stats.per_tensor;
}

}  // namespace

std::vector<size_t> device_to_host_runs(const PackedChunks& packed, int64_t max_bytes,
                                        int64_t alignment) {
  std::vector<size_t> ends;
  for (size_t first = 0; first < packed.chunks.size();) {
    size_t end = first + 1;
    int64_t bytes = packed.chunks[first].bytes;
    while (end < packed.chunks.size() && packed.chunks[end].source == packed.chunks[first].source &&
           round_up(bytes, alignment) + packed.chunks[end].bytes <= max_bytes) {
      bytes = round_up(bytes, alignment) + packed.chunks[end].bytes;
      ++end;
    }
    ends.push_back(end);
    first = end;
  }
  return ends;
}

void submit_packed_device_to_host(RouteContext& ctx, PackedChunks& packed) {
  if (packed.chunks.empty()) return;
  const int64_t alignment = chunk_base_alignment(ctx.options.min_packed_alignment_bytes);
  size_t first = 0;
  for (const size_t end :
       device_to_host_runs(packed, ctx.options.max_packed_chunk_bytes, alignment)) {
    submit_run(ctx, packed, first, end, alignment);
    first = end;
  }
  ctx.stats.packed += static_cast<int64_t>(packed.copies.size());
  ctx.stats.chunks += static_cast<int64_t>(packed.chunks.size());
  packed = PackedChunks();
}

void copy_device_to_host(RouteContext& ctx, c10::DeviceIndex source,
                         std::span<const int64_t> leaves) {
  const c10::cuda::CUDAStream stream = ctx.streams.of(source);
  c10::cuda::CUDAStreamGuard guard(stream);
  std::vector<PackCandidate> candidates;
  std::vector<int64_t> singles;
  for (const int64_t leaf : leaves) {
    const at::Tensor& t = ctx.inputs[leaf];
    const auto bytes = static_cast<int64_t>(t.nbytes());
    if (bytes == 0) {
      ctx.outputs[leaf] = at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kCPU));
      copy_math_bits(t, ctx.outputs[leaf]);
      ++ctx.stats.per_tensor;
    } else if (ctx.options.pack_cpu_tensors && t.is_contiguous() && is_packable_size(bytes)) {
      candidates.push_back({leaf, bytes, static_cast<int64_t>(t.element_size())});
    } else {
      singles.push_back(leaf);
    }
  }
  if (!candidates.empty()) pack_device_to_host(ctx, candidates, singles, source, stream.stream());
  if (!singles.empty()) {
    PinnedPipeline pipeline(ctx.completion, source, stream.stream());
    for (const int64_t leaf : singles) single_device_to_host(ctx, leaf, pipeline, stream.stream());
    ctx.stats.pinned_bytes += pipeline.pinned_bytes();
    pipeline.drain();
  }
  const AddElapsed timed(ctx.stats.driver_us);
  ctx.completion.record(source, stream.stream());
}

}  // namespace mtc::detail
