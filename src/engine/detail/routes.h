// The copy routes, one per (source kind, target kind). Each enqueues its device work on the
// captured streams, fills its outputs and registers what completion must wait for.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "detail/completion.h"
#include "detail/staging.h"
#include "mtc/copier.h"

namespace mtc::detail {

// The current stream of the target and of every other CUDA device, captured on the caller's
// thread at start_copy (current streams are per thread); none but the target's in a process
// without a CUDA context, which has no input on a GPU.
class CapturedStreams {
 public:
  void add(c10::DeviceIndex device);
  c10::cuda::CUDAStream of(c10::DeviceIndex device) const;
  const std::vector<c10::cuda::CUDAStream>& all() const { return streams_; }

 private:
  std::vector<c10::cuda::CUDAStream> streams_;
};

// An output that will be a view of a packed chunk (device-to-host, device-to-device), created
// once every DMA is queued.
struct DeferredView {
  int32_t storage = -1;  // index into RouteContext::storages; -1: none
  int64_t byte_offset = 0;
};

// Adds the wall time of its scope, in microseconds, to `total` (CopyStats::allocate_us and
// driver_us).
class AddElapsed {
 public:
  explicit AddElapsed(double& total) : total_(total) {}
  AddElapsed(const AddElapsed&) = delete;
  AddElapsed& operator=(const AddElapsed&) = delete;
  ~AddElapsed() {
    total_ += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
                  .count();
  }

 private:
  double& total_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct RouteContext {
  const CopyOptions& options;
  c10::Device target;
  const std::vector<at::Tensor>& inputs;
  std::vector<at::Tensor>& outputs;     // by leaf, for outputs created by the routes
  std::vector<DeferredView>& views;     // by leaf, for outputs created later
  std::vector<c10::Storage>& storages;  // packed chunks on the target
  CopyStats& stats;
  Completion& completion;
  const CapturedStreams& streams;

  int32_t add_storage(c10::Storage storage) {
    storages.push_back(std::move(storage));
    return static_cast<int32_t>(storages.size() - 1);
  }
};

// Small tensors packed while the structure was walked: CPU tensors bound for a GPU, or GPU
// tensors bound for the CPU. Their outputs already exist, as views of chunk storages that have
// no memory yet; the submission attaches it (device memory for a GPU target, a block of host
// memory for the CPU).
struct PackedChunks {
  struct Chunk {
    c10::Storage storage;   // on the target, memory attached at submission
    int64_t bytes = 0;      // payload
    int64_t staging = 0;    // where the chunk starts in the staging buffer (GPU->CPU: its items'
                            // offsets are from here too; the submission lays chunks out anew)
    size_t first_item = 0;  // its items are [first_item, next chunk's first_item)
    c10::DeviceIndex source = -1;  // GPU->CPU: the device every item is on
  };
  std::vector<Chunk> chunks;
  std::vector<StagingCopy> copies;      // by item: source, staging offset, bytes
  std::vector<c10::TensorImpl*> views;  // by item: the output (owned by the new structure)
  const std::byte* staged = nullptr;    // CPU->GPU: the filled staging, once staged

  // Staging bytes for all chunks, each starting at a multiple of kStagingAlignment.
  int64_t staging_bytes() const;
  // Where a chunk added after these would start in the staging buffer.
  int64_t next_chunk_staging() const;
};

inline constexpr int64_t kStagingAlignment = 256;

// Stages and submits packed chunks on the target's captured stream, then empties `packed` (the
// chunks' storages live on in their views); records no event. Its two halves apart, for a split
// walk: every walking thread stages its own chunks (takes staging and fills it, with its own
// context: stats, completion), safe for several routers at once, while one thread queues them
// all (device memory and a DMA per chunk). Several threads queueing at once wait on each other
// in the driver: under Nsight Systems a training step's DMA calls took a median of 33 us, with
// waits of 46 us for a lock in the driver; queued by one thread, CPU->GPU copies were
// 6.5-8.9 % shorter (in-process A/B, 1 x H200, 2026-11-29). With pageable staging each thread
// queues its own: the driver copies out of pageable memory on the calling thread. One
// cudaMemcpyBatchAsync for every thread's chunks would be one driver call, but it refuses the
// legacy default stream, which torch programs copy on by default (tried, 2026-12-02).
void stage_packed_host_to_device(RouteContext& ctx, PackedChunks& packed);
void queue_packed_host_to_device(RouteContext& ctx, PackedChunks& packed);
void submit_packed_host_to_device(RouteContext& ctx, PackedChunks& packed);

// CPU sources (pageable or pinned) to the CUDA target: the chunks packed during the walk that
// are not yet submitted (then empties `packed`), then `leaves` one by one; records the
// completion event.
void copy_host_to_device(RouteContext& ctx, PackedChunks& packed, std::span<const int64_t> leaves);
// GPU->CPU chunks packed during the walk, from any number of routers (absorbed into one): each
// run of consecutive chunks of one source device, up to max_packed_chunk_bytes together, is
// gathered on that device into one buffer, crosses in one DMA and lands in one block of host
// memory, each chunk's storage a part of it. Then empties `packed`; records no event.
void submit_packed_device_to_host(RouteContext& ctx, PackedChunks& packed);
// Where those runs end (one past each run's last chunk): consecutive chunks of one source
// device, each at the next multiple of `alignment` after the previous one's end, as long as
// they end within max_bytes; a chunk that reaches it alone is a run of its own.
std::vector<size_t> device_to_host_runs(const PackedChunks& packed, int64_t max_bytes,
                                        int64_t alignment);
// Sources on CUDA device `source` to the CPU target (the leaves not packed during the walk);
// records the completion event on the source's stream.
void copy_device_to_host(RouteContext& ctx, c10::DeviceIndex source,
                         std::span<const int64_t> leaves);
// Sources on CUDA device `source` to a different CUDA target.
void copy_device_to_device(RouteContext& ctx, c10::DeviceIndex source,
                           std::span<const int64_t> leaves);

}  // namespace mtc::detail
