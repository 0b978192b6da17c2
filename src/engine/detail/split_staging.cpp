#include "detail/split_staging.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <numeric>

#include "detail/cuda_check.h"
#include "detail/device_block_stash.h"
#include "detail/outputs.h"
#include "detail/pinned_pool_set.h"
#include "detail/round_up.h"
#include "detail/staging.h"
#include "mtc/nvtx.h"

namespace mtc::detail {

int64_t SplitStaging::place_alignment(const CopyOptions& options) {
  // A chunk keeps its alignment on the device when its place and its offset in the thread's
  // staging (a multiple of kStagingAlignment) are both multiples of the chunk base alignment.
  return std::lcm(chunk_base_alignment(options.min_packed_alignment_bytes), kStagingAlignment);
}

SplitStaging::SplitStaging(RouteContext& ctx, int64_t bytes, int64_t views)
    : alignment_(place_alignment(ctx.options)),
      storage_(make_storage(c10::DataPtr(nullptr, ctx.target), 0)) {
  if (bytes <= 0) return;
  {
    const AddElapsed timed(ctx.stats.allocate_us);
    block_ = PinnedPoolSet::instance().for_device(ctx.target.index()).try_acquire(bytes);
  }
  if (!block_) return;
  ctx.completion.hold(block_);
  ctx.stats.pinned_bytes += block_.bytes;
  // Counted back to back on a line no other thread has touched: one core's writes, no transfer.
  // At most kMostPrepaid (~0.1 ms of counting), whatever an earlier walk forecast.
  views = std::clamp<int64_t>(views, 0, kMostPrepaid);
  c10::StorageImpl* impl = storage_.unsafeGetStorageImpl();
  for (int64_t i = 0; i < views; ++i) c10::raw::intrusive_ptr::incref(impl);
  prepaid_.store(views, std::memory_order_relaxed);
}

SplitStaging::~SplitStaging() {
  // Every thread is done with the storage by now: these are this thread's writes alone.
  c10::StorageImpl* impl = storage_.unsafeGetStorageImpl();
  for (int64_t i = prepaid_.load(std::memory_order_relaxed); i > 0; --i)
    (void)c10::intrusive_ptr<c10::StorageImpl>::reclaim(impl);
}

void SplitStaging::take_references(int64_t wanted) {
  const int64_t left = prepaid_.fetch_sub(wanted, std::memory_order_relaxed);
  c10::StorageImpl* impl = storage_.unsafeGetStorageImpl();
  for (int64_t i = std::clamp<int64_t>(left, 0, wanted); i < wanted; ++i)
    c10::raw::intrusive_ptr::incref(impl);
}

bool SplitStaging::stage(RouteContext& ctx, PackedChunks& packed) {
  if (!block_ || packed.chunks.empty() || packed.staged != nullptr) return false;
  for (const PackedChunks::Chunk& chunk : packed.chunks)
    if (chunk.staging % chunk_base_alignment(ctx.options.min_packed_alignment_bytes) != 0)
      return false;
  const int64_t bytes = round_up(packed.staging_bytes(), alignment_);
  int64_t place = next_.load(std::memory_order_relaxed);
  do {
    if (place + bytes > block_.bytes) return false;
  } while (!next_.compare_exchange_weak(place, place + bytes, std::memory_order_relaxed));
  fill_staging(packed.copies, block_.data + place);
  packed.staged = block_.data + place;
  take_references(static_cast<int64_t>(packed.views.size()));
  // Each chunk's outputs move onto the shared storage, as far in as the chunk's place, each with
  // a reference taken above. The offsets stay whole numbers of elements: places are multiples
  // of 256, element sizes at most 16.
  c10::StorageImpl* shared = storage_.unsafeGetStorageImpl();
  for (size_t c = 0; c < packed.chunks.size(); ++c) {
    const int64_t delta = place + packed.chunks[c].staging;
    const size_t last =
        c + 1 < packed.chunks.size() ? packed.chunks[c + 1].first_item : packed.views.size();
    for (size_t k = packed.chunks[c].first_item; k < last; ++k) {
      c10::TensorImpl* view = packed.views[k];
      view->set_storage_keep_dtype(
          c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim(shared)));
      view->set_storage_offset(view->storage_offset() +
                               delta / static_cast<int64_t>(view->dtype().itemsize()));
    }
  }
  return true;
}

void SplitStaging::queue(RouteContext& ctx, std::span<PackedChunks* const> staged) {
  const int64_t bytes = next_.load(std::memory_order_acquire);
  if (staged.empty() || bytes == 0) return;
  const c10::cuda::CUDAStream stream = ctx.streams.of(ctx.target.index());
  c10::cuda::CUDAStreamGuard guard(stream);
  const int64_t base_alignment = chunk_base_alignment(ctx.options.min_packed_alignment_bytes);
  const int64_t slack = chunk_slack(base_alignment, kDeviceAllocAlignment);
  c10::DataPtr data;
  {
    MTC_RANGE(allocate, "allocate");
    const AddElapsed timed(ctx.stats.allocate_us);
    const auto size = static_cast<size_t>(bytes + slack);
    data = device_block_stash::take(stream, size);
    if (!data) data = c10::cuda::CUDACachingAllocator::get()->allocate(size);
  }
  const int64_t shift = alignment_shift(data.get(), base_alignment);
  {
    MTC_RANGE(submit, "submit");
    const AddElapsed timed(ctx.stats.driver_us);
    MTC_CUDA_CHECK(cudaMemcpyAsync(static_cast<std::byte*>(data.get()) + shift, block_.data,
                                   static_cast<size_t>(bytes), cudaMemcpyHostToDevice,
                                   stream.stream()));
  }
  for (PackedChunks* packed : staged) {
    if (shift != 0) {
      // Only for alignments the allocator's own does not cover; shift is a multiple of 16.
      for (c10::TensorImpl* view : packed->views)
        view->set_storage_offset(view->storage_offset() +
                                 shift / static_cast<int64_t>(view->dtype().itemsize()));
    }
    ctx.stats.packed += static_cast<int64_t>(packed->views.size());
    *packed = PackedChunks();
  }
  storage_.set_data_ptr_noswap(std::move(data));
  storage_.set_nbytes(static_cast<size_t>(bytes + slack));
  ++ctx.stats.chunks;
}

}  // namespace mtc::detail
