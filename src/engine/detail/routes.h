// The copy routes, one per (source kind, target kind). Each enqueues its device work on the
// captured streams, fills its outputs and registers what completion must wait for.
#pragma once

#include "detail/completion.h"
#include "mtc/copier.h"

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>
#include <span>
#include <vector>

namespace mtc::detail {

// The current stream of every CUDA device the copy touches, captured on the caller's thread
// at start_copy (current streams are per thread).
class CapturedStreams {
 public:
  void add(c10::DeviceIndex device);
  c10::cuda::CUDAStream of(c10::DeviceIndex device) const;
  const std::vector<c10::cuda::CUDAStream>& all() const { return streams_; }

 private:
  std::vector<c10::cuda::CUDAStream> streams_;
};

// An output that will be a view of a packed chunk. Views are created after every DMA is
// queued, split across workers together with the structure rebuild.
struct DeferredView {
  int32_t storage = -1;  // index into RouteContext::storages; -1: none
  int64_t byte_offset = 0;
};

struct RouteContext {
  const CopyOptions& options;
  c10::Device target;
  const std::vector<at::Tensor>& inputs;
  std::vector<at::Tensor>& outputs;       // by leaf, for outputs created by the routes
  std::vector<DeferredView>& views;       // by leaf, for outputs created later
  std::vector<c10::Storage>& storages;    // packed chunks on the target
  CopyStats& stats;
  Completion& completion;
  const CapturedStreams& streams;

  int32_t add_storage(c10::Storage storage) {
    storages.push_back(std::move(storage));
    return static_cast<int32_t>(storages.size() - 1);
  }
};

// CPU sources (pageable or pinned) to the CUDA target.
void copy_host_to_device(RouteContext& ctx, std::span<const int64_t> leaves);
// Sources on CUDA device `source` to the CPU target.
void copy_device_to_host(RouteContext& ctx, c10::DeviceIndex source, std::span<const int64_t> leaves);
// Sources on CUDA device `source` to a different CUDA target.
void copy_device_to_device(RouteContext& ctx, c10::DeviceIndex source,
                           std::span<const int64_t> leaves);

}  // namespace mtc::detail
