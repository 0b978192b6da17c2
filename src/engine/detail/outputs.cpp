#include "detail/outputs.h"

#include <c10/core/DispatchKeySet.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/TensorImpl.h>

#include <atomic>
#include <numeric>
#include <typeinfo>

#include "detail/host_block_cache.h"
#include "detail/impl_pool.h"
#include "detail/prefetch.h"
#include "detail/version_pool.h"

namespace mtc::detail {
namespace {

std::atomic<bool> copied_shape{true};
std::atomic<bool> free_ahead{true};

// The key set TensorImpl's own constructor gives a tensor of `backend` outside InferenceMode (the
// autograd keys with the backend's) or inside it (an inference tensor's), read from a tensor made
// that way.
c10::DispatchKeySet keys_of(c10::DispatchKey backend, c10::DeviceType device_type, bool inference) {
  const c10::InferenceMode mode(inference);
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::DispatchKeySet(backend), caffe2::TypeMeta::Make<uint8_t>(), c10::Device(device_type));
  return impl->key_set();
}

// The keys of a new output of `backend`, inside InferenceMode or not, each read once.
c10::DispatchKeySet output_keys(c10::DispatchKey backend, bool inference) {
  static const c10::DispatchKeySet keys[2][2] = {
      {keys_of(c10::DispatchKey::CPU, c10::kCPU, false),
       keys_of(c10::DispatchKey::CPU, c10::kCPU, true)},
      {keys_of(c10::DispatchKey::CUDA, c10::kCUDA, false),
       keys_of(c10::DispatchKey::CUDA, c10::kCUDA, true)}};
  return keys[backend == c10::DispatchKey::CUDA ? 1 : 0][inference ? 1 : 0];
}

c10::DispatchKeySet plain_keys(c10::DispatchKey backend) { return output_keys(backend, false); }

// A plain TensorImpl whose memory comes from impl_pool and whose version counter from
// version_pool: outputs are usually freed on another thread than the one that made them.
class OutputImpl final : public c10::TensorImpl {
 public:
  // As TensorImpl's own constructor makes it (inside InferenceMode: an inference tensor).
  OutputImpl(c10::Storage&& storage, c10::DispatchKey backend, caffe2::TypeMeta dtype)
      : c10::TensorImpl(std::move(storage), c10::DispatchKeySet(backend), dtype) {}

  // The same outside InferenceMode, with a counter from version_pool. TensorImpl's view
  // constructor, given the backend's key alone, makes an inference tensor and allocates no
  // counter; the keys and the counter a plain constructor would have given are then set here.
  OutputImpl(c10::Storage&& storage, c10::DispatchKey backend, caffe2::TypeMeta dtype,
             c10::VariableVersion&& counter)
      : c10::TensorImpl(c10::TensorImpl::VIEW, std::move(storage), c10::DispatchKeySet(backend),
                        dtype) {
    key_set_ = plain_keys(backend);
    version_counter_ = std::move(counter);
  }

  // The counter goes back to the shard whose workers made this output (the block's header says
  // which), not to the freeing thread's: a thread that only frees results, or frees those of
  // several GPUs, would otherwise feed a shard whose workers never take from it.
  ~OutputImpl() override {
    // Asked for before this output's own work: the lines of the output that a free in the
    // structure's order reaches kFreeAhead outputs later (see chain_for_free). A stale address,
    // of an output freed out of that order, is only a wasted prefetch: prefetches never fault.
    if (free_ahead_ != nullptr)
      prefetch::lines_for_write(free_ahead_, sizeof(OutputImpl), kMaxLines);
    version_pool::give_back(std::move(version_counter_),
                            impl_pool::shard_of(this, sizeof(OutputImpl)));
  }

  // The shape of `like`, a contiguous tensor: its sizes and strides, element count and memory
  // format flags copied as they are, where set_sizes_contiguous() would compute each again from
  // the sizes. The strides are `like`'s own, as `.to()` keeps them (a dimension of size 1 may
  // have any stride).
  void set_shape_of_contiguous(c10::TensorImpl& like) {
    sizes_and_strides_ = like.sizes_and_strides();
    numel_ = like.numel();
    is_contiguous_ = true;
    is_channels_last_contiguous_ = like.is_contiguous(at::MemoryFormat::ChannelsLast);
    is_channels_last_3d_contiguous_ = like.is_contiguous(at::MemoryFormat::ChannelsLast3d);
    is_channels_last_ = like.is_strides_like_channels_last();
    is_channels_last_3d_ = like.is_strides_like_channels_last_3d();
    is_non_overlapping_and_dense_ = like.is_non_overlapping_and_dense();
  }

  static void* operator new(size_t bytes) { return impl_pool::allocate(bytes); }
  static void operator delete(void* block, size_t bytes) noexcept {
    impl_pool::release(block, bytes);
  }

  // The output a free in the structure's order reaches kFreeAhead outputs after this one.
  const void* free_ahead_ = nullptr;

 private:
  // The lines an OutputImpl can span, wherever it starts (it is at most four lines long).
  static constexpr size_t kMaxLines = 5;
};

// impl_pool's blocks have operator new's default alignment (its header keeps it).
static_assert(alignof(OutputImpl) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
// OutputImpl::kMaxLines covers an object of at most four lines.
static_assert(sizeof(OutputImpl) <= 4 * prefetch::kLine);

// Whether an output may take `like`'s shape as it is (set_shape_of_contiguous): its fields hold
// the shape only when no subclass policy (symbolic shapes, a Python subclass's own sizes) stands
// in for them.
bool shape_can_be_copied(const at::Tensor& like) {
  if (!copied_shape.load(std::memory_order_relaxed)) return false;
  const c10::TensorImpl& impl = *like.unsafeGetTensorImpl();
  return !impl.has_symbolic_sizes_strides() && !impl.key_set().has(c10::DispatchKey::Python);
}

// Gives `impl` the sizes and strides of `like`, starting `byte_offset` bytes into its storage: for
// a new output and for a reused one alike.
void set_shape_like(OutputImpl& impl, const at::Tensor& like, int64_t byte_offset) {
  const int64_t storage_offset = byte_offset / static_cast<int64_t>(like.element_size());
  if (like.is_contiguous()) {
    if (shape_can_be_copied(like)) {
      impl.set_shape_of_contiguous(*like.unsafeGetTensorImpl());
    } else {
      impl.set_sizes_contiguous(like.sizes());
    }
    impl.set_storage_offset(storage_offset);
  } else {
    impl.set_sizes_and_strides(like.sizes(), like.strides(), storage_offset);
  }
}

c10::intrusive_ptr<OutputImpl> make_output_impl(const c10::Storage& storage,
                                                caffe2::TypeMeta dtype) {
  const c10::DispatchKey backend = storage.device_type() == c10::DeviceType::CUDA
                                       ? c10::DispatchKey::CUDA
                                       : c10::DispatchKey::CPU;
  if (c10::InferenceMode::is_enabled())
    return c10::make_intrusive<OutputImpl>(c10::Storage(storage), backend, dtype);
  return c10::make_intrusive<OutputImpl>(c10::Storage(storage), backend, dtype,
                                         version_pool::take());
}

}  // namespace

c10::Storage make_storage(c10::DataPtr data, int64_t bytes) {
  return c10::Storage(c10::Storage::use_byte_size_t(), static_cast<size_t>(bytes), std::move(data),
                      /*allocator=*/nullptr, /*resizable=*/false);
}

c10::Storage make_host_chunk_storage() {
  return c10::Storage(c10::Storage::use_byte_size_t(), 0,
                      c10::DataPtr(nullptr, c10::Device(c10::kCPU)), &HostBlockCache::instance(),
                      /*resizable=*/true);
}

c10::Storage make_alias_storage(const c10::Storage& storage) {
  TORCH_INTERNAL_ASSERT(storage.device_type() == c10::DeviceType::CPU,
                        "make_alias_storage: CPU storages only");
  auto* owner = new c10::Storage(storage);
  c10::DataPtr data(
      owner->mutable_data(), owner, [](void* o) { delete static_cast<c10::Storage*>(o); },
      storage.device());
  // Resizable with the same allocator when `storage` is: a view's resize_() beyond the chunk
  // behaves as it would on the chunk's own storage (new memory for the storage it is on).
  return c10::Storage(c10::Storage::use_byte_size_t(), storage.nbytes(), std::move(data),
                      storage.allocator(), storage.resizable());
}

at::Tensor make_view(const c10::Storage& storage, int64_t byte_offset, const at::Tensor& like) {
  auto impl = make_output_impl(storage, like.dtype());
  set_shape_like(*impl, like, byte_offset);
  at::Tensor out(std::move(impl));
  copy_math_bits(like, out);
  return out;
}

bool reuse_as_view(c10::TensorImpl& impl, const c10::Storage& storage, int64_t byte_offset,
                   const at::Tensor& like, c10::Device target,
                   std::vector<c10::Storage>& released) {
  if (typeid(impl) != typeid(OutputImpl) || impl.device() != target || impl.dtype() != like.dtype())
    return false;
  // The caller's reference alone, and no weak one: nothing else can see what changes here.
  {
    auto owner = c10::intrusive_ptr<c10::TensorImpl>::reclaim(&impl);
    const bool alone = owner.use_count() == 1 && owner.weak_use_count() == 1;
    owner.release();
    if (!alone) return false;
  }
  const bool inference = c10::InferenceMode::is_enabled();
  const c10::DispatchKey backend =
      target.is_cuda() ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU;
  if (impl.key_set() != output_keys(backend, inference) || impl.autograd_meta() != nullptr ||
      impl.has_named_tensor_meta() || impl.has_symbolic_sizes_strides() ||
      !impl.allow_tensor_metadata_change())
    return false;
  // A view the program made of the old output shares its counter: resetting it would change
  // that view's version.
  if (!inference && !impl.version_counter().unique()) return false;
  // Kept once per run of leaves on one storage (consecutive outputs of a result share a chunk):
  // `old` dying here is then never the last reference, the one kept in `released` outlives it.
  c10::Storage old = impl.storage();
  if (released.empty() || released.back().unsafeGetStorageImpl() != old.unsafeGetStorageImpl())
    released.push_back(old);  // may throw: nothing has changed yet
  impl.set_storage_keep_dtype(storage);
  set_shape_like(static_cast<OutputImpl&>(impl), like, byte_offset);
  if (!inference && impl.version_counter().current_version() != 0)
    c10::VariableVersion(impl.version_counter()).set_version(0);
  impl._set_conj(like.is_conj());
  impl._set_neg(like.is_neg());
  // Unchained, as make_view makes it: its old link names an output of the result it left.
  static_cast<OutputImpl&>(impl).free_ahead_ = nullptr;
  return true;
}

void set_copied_shape(bool on) { copied_shape.store(on, std::memory_order_relaxed); }

void set_free_ahead(bool on) { free_ahead.store(on, std::memory_order_relaxed); }

void chain_for_free(c10::TensorImpl* earlier, const c10::TensorImpl* later) {
  if (earlier == nullptr || later == nullptr || !free_ahead.load(std::memory_order_relaxed)) return;
  if (typeid(*earlier) != typeid(OutputImpl) || typeid(*later) != typeid(OutputImpl)) return;
  static_cast<OutputImpl*>(earlier)->free_ahead_ = later;
}

const void* chained_for_free(const c10::TensorImpl& impl) {
  if (typeid(impl) != typeid(OutputImpl)) return nullptr;
  return static_cast<const OutputImpl&>(impl).free_ahead_;
}

void copy_math_bits(const at::Tensor& like, at::Tensor& out) {
  if (like.is_conj()) out._set_conj(true);
  if (like.is_neg()) out._set_neg(true);
}

int64_t chunk_base_alignment(int64_t min_alignment) { return std::lcm(min_alignment, int64_t{16}); }

int64_t chunk_slack(int64_t base_alignment, int64_t block_alignment) {
  return block_alignment % base_alignment == 0 ? 0 : base_alignment;
}

int64_t alignment_shift(const void* address, int64_t alignment) {
  const auto a = static_cast<int64_t>(reinterpret_cast<uintptr_t>(address) % alignment);
  return a == 0 ? 0 : alignment - a;
}

}  // namespace mtc::detail
