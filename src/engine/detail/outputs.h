// Output tensors built directly on a shared storage. Constructing the TensorImpl and setting
// sizes and strides costs ~0.07 us a tensor, against ~0.8 us through empty().set_().
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>

#include <cstdint>
#include <vector>

namespace mtc::detail {

// What a device allocation's address is assumed to be a multiple of: the native CUDA caching
// allocator gives 512 bytes, the cudaMallocAsync backend may give only 256.
inline constexpr int64_t kDeviceAllocAlignment = 256;

// What a packed chunk's start must be a multiple of so that every item, at a multiple of
// max(alignment, element size) from it, is aligned as promised: lcm(alignment, 16), 16 being
// the largest element size. Equal to the alignment for powers of two of 16 and more.
int64_t chunk_base_alignment(int64_t min_alignment);

// Extra bytes to allocate so a chunk start of that alignment fits in a block whose own
// address is a multiple of `block_alignment`.
int64_t chunk_slack(int64_t base_alignment, int64_t block_alignment);

// A storage of `bytes` owning `data` (allocation base may precede data by the alignment shift).
c10::Storage make_storage(c10::DataPtr data, int64_t bytes);

// The storage of a GPU->CPU chunk packed during the walk, before its memory exists (attached
// at submission): resizable with the host block cache, as the routes' other CPU outputs are.
c10::Storage make_host_chunk_storage();

// A second storage over the bytes of CPU `storage` that keeps it alive until it dies itself.
// Views made on it count their references there, not on `storage`: threads that make views of
// one chunk at once then do not share one reference count. It has the allocator and the
// resizability of `storage`. Not for CUDA storages: torch's record_stream ignores memory whose
// DataPtr is not the caching allocator's own.
c10::Storage make_alias_storage(const c10::Storage& storage);

// A tensor of `like`'s dtype, sizes and strides over `storage`, starting `byte_offset` bytes in.
// byte_offset must be a multiple of the element size.
at::Tensor make_view(const c10::Storage& storage, int64_t byte_offset, const at::Tensor& like);

// Makes `impl`, an output offered for reuse (mtc::ReusableOutputs), what make_view would make
// for `like` on `storage` (on `target`), when it qualifies as that header says; returns whether
// it did. Leaves a TensorImpl that does not qualify untouched. Its previous storage goes to
// `released` (once per run of leaves that shared it), so that it is freed where the job is, on
// the caller's thread, and never on a worker: its memory may be anything the program set.
bool reuse_as_view(c10::TensorImpl& impl, const c10::Storage& storage, int64_t byte_offset,
                   const at::Tensor& like, c10::Device target, std::vector<c10::Storage>& released);

// An output of a contiguous input takes the input's sizes, strides, element count and memory
// format flags as they are (on by default), instead of computing them again from its sizes with
// canonical strides: for benchmarks that compare the two in one process.
void set_copied_shape(bool on);

// A result is usually freed in the order its structure holds its leaves, by another thread than
// the one that made them (the caller, while the next copy's walk runs), and each output's lines
// are then in another core's cache or in memory: the free waits for them one output at a time.
// chain_for_free(earlier, later) has `earlier`'s free ask for `later`'s lines, for two outputs
// the same walk made kFreeAhead apart in that order, both alive (both held by the structure
// being built). Outputs that are not the engine's own, or the setting off, are left unchained.
inline constexpr size_t kFreeAhead = 3;
void chain_for_free(c10::TensorImpl* earlier, const c10::TensorImpl* later);
// On by default; off, no output is chained (for benchmarks that compare the two in one process).
void set_free_ahead(bool on);
// The output `impl`'s free asks for, or null (tests).
const void* chained_for_free(const c10::TensorImpl& impl);

// Gives `out` the conjugate and negative bits of `like`: outputs copy raw bytes, so a lazily
// conjugated (or negated) input must come out flagged the same way to mean the same values.
void copy_math_bits(const at::Tensor& like, at::Tensor& out);

// Bytes to skip from `address` to reach the next multiple of `alignment`.
int64_t alignment_shift(const void* address, int64_t alignment);

}  // namespace mtc::detail
