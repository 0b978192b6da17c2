// The engine's policy for the structure walk (structure.h): decides, leaf by leaf, how each
// tensor gets to the target. Small contiguous CPU tensors bound for a GPU, and small contiguous
// GPU tensors bound for the CPU, are packed at once: their outputs are created during the walk,
// while the walking thread has the input's header in its cache, as views of chunk storages
// whose memory is attached when the chunks are submitted. A router packs GPU tensors of one
// device (the first it packs from); others are deferred. Tensors already on the target are
// returned as they are. Every other leaf is deferred to a route and placed in the new structure
// afterwards.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
#include <vector>

#include "detail/pack_plan.h"
#include "detail/routes.h"
#include "mtc/copier.h"

namespace mtc::detail {

class LeafRouter {
 public:
  // `reuse` (may be null): outputs offered for the packed leaves (mtc::ReusableOutputs); it
  // outlives the router.
  LeafRouter(c10::Device target, const CopyOptions& options, CopyStats& stats,
             ReusableOutputs* reuse = nullptr);

  // The walk's callbacks. leaf() throws c10::Error naming the leaf for tensors that cannot be
  // copied (not strided, or on a device other than cpu/cuda).
  int64_t leaf(const at::Tensor& input, c10::IValue& output);
  void place(int64_t id, c10::IValue* slot) { slots_[id] = slot; }

  // In a walk split by root element: names the element the next leaves belong to, so an
  // error can say where a leaf is (leaf numbers then count from the element's first).
  void begin_element(int64_t element) {
    element_ = element;
    element_first_leaf_ = stats_.tensors;
  }
  // Takes over another router's packed chunks (unless already submitted), deferred leaves and
  // counts (after its walk and placements are complete).
  void absorb(LeafRouter& other);
  // Takes over only another router's previous storages of reused outputs (a failed walk's).
  void absorb_released_storages(LeafRouter& other);

  PackedChunks& packed() { return packed_; }
  // Leaves left to the routes and where each one's output goes: in leaf order for one router;
  // after absorbing the routers of a split walk, grouped by router.
  const std::vector<at::Tensor>& deferred() const { return deferred_; }
  const std::vector<c10::IValue*>& slots() const { return slots_; }

 private:
  // The packed output of `input` (tensor leaf `index` as leaf() numbers it): a new view of the
  // chunk, or an undefined tensor where an offered TensorImpl took its place.
  at::Tensor pack(const at::Tensor& input, int64_t bytes, int64_t index);
  // Where in ReusableOutputs::by_leaf a TensorImpl is offered for tensor leaf `index`, or -1.
  int64_t offered_leaf(int64_t index) const;
  // Chains the view packed kFreeAhead views before the last one to it (outputs.h,
  // chain_for_free): both are in the structure this router's walk is building.
  void chain_last_view();
  // Whether a GPU tensor bound for the CPU on `device` may join this router's chunks: those of
  // the first device it packs from, which the first call claims.
  bool claim_pack_source(c10::DeviceIndex device) {
    if (pack_source_ < 0) pack_source_ = device;
    return device == pack_source_;
  }
  // "tensor leaf N" (and " of root element E" in a split walk), for error messages.
  std::string where(int64_t index) const;

  c10::Device target_;
  bool pack_to_device_;    // a CUDA target with packing on
  bool pack_from_device_;  // the CPU target with packing on
  c10::DeviceIndex pack_source_ = -1;
  ChunkPacker packer_;
  CopyStats& stats_;
  ReusableOutputs* reuse_;
  int64_t element_ = -1;  // -1: leaves are numbered from the structure's first
  int64_t element_first_leaf_ = 0;
  PackedChunks packed_;
  // The previous storages of reused outputs (reuse_as_view), freed with the router: the job's own
  // router on the caller's thread, the others' absorbed into it.
  std::vector<c10::Storage> released_storages_;
  std::vector<at::Tensor> deferred_;
  std::vector<c10::IValue*> slots_;
};

}  // namespace mtc::detail
