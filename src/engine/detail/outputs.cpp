#include "detail/outputs.h"

#include <c10/core/DispatchKeySet.h>
#include <c10/core/TensorImpl.h>

#include <numeric>

#include "detail/impl_pool.h"

namespace mtc::detail {
namespace {

// A plain TensorImpl whose memory comes from impl_pool: outputs are usually freed on another
// thread than the one that made them.
class OutputImpl final : public c10::TensorImpl {
 public:
  using c10::TensorImpl::TensorImpl;
  static void* operator new(size_t bytes) { return impl_pool::allocate(bytes); }
  static void operator delete(void* block, size_t bytes) noexcept {
    impl_pool::release(block, bytes);
  }
};

}  // namespace

c10::Storage make_storage(c10::DataPtr data, int64_t bytes) {
  return c10::Storage(c10::Storage::use_byte_size_t(), static_cast<size_t>(bytes), std::move(data),
                      /*allocator=*/nullptr, /*resizable=*/false);
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
  const c10::DispatchKey key = storage.device_type() == c10::DeviceType::CUDA
                                   ? c10::DispatchKey::CUDA
                                   : c10::DispatchKey::CPU;
  auto impl = c10::make_intrusive<OutputImpl>(c10::Storage(storage), c10::DispatchKeySet(key),
                                              like.dtype());
  const int64_t storage_offset = byte_offset / static_cast<int64_t>(like.element_size());
  if (like.is_contiguous()) {
    // Cheaper than set_sizes_and_strides: no strides to copy and check.
    impl->set_sizes_contiguous(like.sizes());
    impl->set_storage_offset(storage_offset);
  } else {
    impl->set_sizes_and_strides(like.sizes(), like.strides(), storage_offset);
  }
  at::Tensor out(std::move(impl));
  copy_math_bits(like, out);
  return out;
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
