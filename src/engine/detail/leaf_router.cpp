#include "detail/leaf_router.h"

#include <iterator>

#include "detail/outputs.h"

namespace mtc::detail {

LeafRouter::LeafRouter(c10::Device target, const CopyOptions& options, CopyStats& stats,
                       ReusableOutputs* reuse)
    : target_(target),
      pack_to_device_(target.is_cuda() && options.pack_cpu_tensors),
      pack_from_device_(target.is_cpu() && options.pack_cpu_tensors),
      packer_(options.min_packed_alignment_bytes, options.max_packed_chunk_bytes),
      stats_(stats),
      reuse_(reuse != nullptr && !reuse->by_leaf.empty() ? reuse : nullptr) {}

int64_t LeafRouter::leaf(const at::Tensor& t, c10::IValue& output) {
  const int64_t index = stats_.tensors++;
  if (t.defined()) {
    TORCH_CHECK(t.layout() == c10::kStrided, "mtc: ", where(index), " has layout ", t.layout(),
                "; only strided tensors can be copied");
    // Quantized and nested tensors are strided too, but their bytes alone are not their
    // values (a scale and zero point; the sizes of each part): copied as plain bytes, they came
    // out as plain tensors that meant something else.
    TORCH_CHECK(!t.is_quantized(), "mtc: ", where(index), " is quantized (", t.scalar_type(),
                "); only unquantized tensors can be copied");
    TORCH_CHECK(!t.is_nested(), "mtc: ", where(index),
                " is a nested tensor; only plain (non-nested) tensors can be copied");
    const c10::Device device = t.device();
    TORCH_CHECK(device.is_cpu() || device.is_cuda(), "mtc: ", where(index), " is on ", device.str(),
                "; only cpu and cuda tensors can be copied");
    const auto bytes = static_cast<int64_t>(t.nbytes());
    stats_.bytes += bytes;
    if (device != target_) {
      // The Python module lends exactly the CPU tensors packed here without a reference (its
      // LendingRule): a change here is a change there.
      if (is_packable_size(bytes) && packer_.fits(bytes) && t.is_contiguous() &&
          ((pack_to_device_ && device.is_cpu()) ||
           (pack_from_device_ && device.is_cuda() && claim_pack_source(device.index())))) {
        output = pack(t, bytes, index);
        return -1;
      }
      deferred_.push_back(t);
      slots_.push_back(nullptr);
      return static_cast<int64_t>(deferred_.size() - 1);
    }
  }
  // Undefined, or already on the target: returned as it is.
  output = t;
  ++stats_.reused;
  return -1;
}

std::string LeafRouter::where(int64_t index) const {
  std::string where = "tensor leaf " + std::to_string(index - element_first_leaf_);
  // Element 0's leaves are the structure's first, whether its walk was a part or not (copy_job.h):
  // one bad input, one message.
  if (element_ > 0) where += " of root element " + std::to_string(element_);
  return where;
}

void LeafRouter::absorb(LeafRouter& other) {
  // Staged chunks are laid out in their own staging, which the merge would not carry.
  TORCH_INTERNAL_ASSERT(packed_.staged == nullptr && other.packed_.staged == nullptr,
                        "LeafRouter::absorb: staged chunks");
  deferred_.insert(deferred_.end(), std::make_move_iterator(other.deferred_.begin()),
                   std::make_move_iterator(other.deferred_.end()));
  slots_.insert(slots_.end(), other.slots_.begin(), other.slots_.end());
  // The other's chunks follow ours in the staging buffer.
  const int64_t base = packed_.next_chunk_staging();
  const size_t first_item = packed_.views.size();
  for (PackedChunks::Chunk& chunk : other.packed_.chunks) {
    chunk.staging += base;
    chunk.first_item += first_item;
    packed_.chunks.push_back(std::move(chunk));
  }
  for (StagingCopy copy : other.packed_.copies) {
    copy.dst_offset += base;
    packed_.copies.push_back(copy);
  }
  packed_.views.insert(packed_.views.end(), other.packed_.views.begin(), other.packed_.views.end());
  stats_.tensors += other.stats_.tensors;
  stats_.bytes += other.stats_.bytes;
  stats_.reused += other.stats_.reused;
  stats_.packed += other.stats_.packed;
  stats_.recycled += other.stats_.recycled;
  absorb_released_storages(other);
  stats_.chunks += other.stats_.chunks;
  stats_.pinned_bytes += other.stats_.pinned_bytes;
  other.deferred_.clear();
  other.slots_.clear();
  other.packed_ = PackedChunks();
  other.stats_ = CopyStats();
}

void LeafRouter::absorb_released_storages(LeafRouter& other) {
  released_storages_.insert(released_storages_.end(),
                            std::make_move_iterator(other.released_storages_.begin()),
                            std::make_move_iterator(other.released_storages_.end()));
  other.released_storages_.clear();
}

int64_t LeafRouter::offered_leaf(int64_t index) const {
  int64_t leaf = index;
  if (element_ >= 0) {
    // A split walk numbers leaves from its element's first; element 0's is the structure's first,
    // with a table or without (its own thread may walk it as a part, copy_job.h).
    const auto element = static_cast<size_t>(element_);
    int64_t first = 0;
    if (element < reuse_->element_first_leaf.size()) {
      first = reuse_->element_first_leaf[element];
    } else if (element > 0) {
      return -1;
    }
    leaf = first + index - element_first_leaf_;
  }
  if (leaf < 0 || static_cast<size_t>(leaf) >= reuse_->by_leaf.size() ||
      reuse_->by_leaf[static_cast<size_t>(leaf)] == nullptr)
    return -1;
  return leaf;
}

at::Tensor LeafRouter::pack(const at::Tensor& t, int64_t bytes, int64_t index) {
  const ChunkPacker::Place place = packer_.add(bytes, static_cast<int64_t>(t.element_size()));
  if (place.chunk == static_cast<int64_t>(packed_.chunks.size())) {
    // A new chunk: its storage exists now, its memory once its size is known. A CPU chunk's is
    // resizable with the host block cache, as the outputs of a GPU->CPU copy's routes are.
    const int64_t staging = packed_.next_chunk_staging();
    packed_.chunks.push_back({target_.is_cpu() ? make_host_chunk_storage()
                                               : make_storage(c10::DataPtr(nullptr, target_), 0),
                              0, staging, packed_.views.size(),
                              target_.is_cpu() ? pack_source_ : c10::DeviceIndex{-1}});
  }
  // The packer and the chunks move together (a router packs nothing once its chunks are
  // submitted or absorbed).
  TORCH_INTERNAL_ASSERT(static_cast<size_t>(place.chunk) + 1 == packed_.chunks.size(),
                        "LeafRouter: packing after the chunks were handed over");
  PackedChunks::Chunk& chunk = packed_.chunks.back();
  chunk.bytes = place.offset + bytes;
  packed_.copies.push_back({t.const_data_ptr(), chunk.staging + place.offset, bytes});
  if (reuse_ != nullptr && pack_to_device_) {
    const int64_t leaf = offered_leaf(index);
    c10::TensorImpl* impl = leaf < 0 ? nullptr : reuse_->by_leaf[static_cast<size_t>(leaf)];
    if (impl != nullptr &&
        reuse_as_view(*impl, chunk.storage, place.offset, t, target_, released_storages_)) {
      reuse_->reused[static_cast<size_t>(leaf)] = 1;
      ++stats_.recycled;
      packed_.views.push_back(impl);
      chain_last_view();
      return at::Tensor();
    }
  }
  at::Tensor view = make_view(chunk.storage, place.offset, t);
  packed_.views.push_back(view.unsafeGetTensorImpl());
  chain_last_view();
  return view;
}

void LeafRouter::chain_last_view() {
  const std::vector<c10::TensorImpl*>& views = packed_.views;
  if (views.size() > kFreeAhead) chain_for_free(views[views.size() - 1 - kFreeAhead], views.back());
}

}  // namespace mtc::detail
