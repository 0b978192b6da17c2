// Output dicts made ahead by the thread that will fill them, while it has nothing else to do.
//
// Making an output dict costs two allocations (c10's DictImpl and ska's first table, of 4 slots)
// and, in its reserve(), a third and a free (the table for its entries: 1,120 bytes for five
// keys, past glibc's per-thread caches). The walking threads allocate what the caller frees, so
// their own caches stay empty and each request takes the arena's slow path. On the GPU host the
// output dicts were 88 % of the walk's samples in the allocator, and the allocator about a
// quarter of the walk, hot and after a busy gap alike (results/NOTES.md, 2026-11-29).
//
// A worker between copies spins anyway (worker_pool.h): there it makes the dicts its walks took
// since it last did, shape by shape (element types and entries), one at a time, and stops as soon
// as a task is queued. The walk then takes a made dict instead of allocating one.
//
// Off by default until measured on the GPU host: MTC_DICT_STASH=1 turns it on for a process
// (worker_pool_set.h), set_enabled() for benchmarks that compare the two in one process
// (BM_EngineCopy bit 262144).
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/jit_type_base.h>
#include <c10/util/FunctionRef.h>

#include <cstddef>

namespace mtc::detail::dict_stash {

// Dicts of more entries are always made on the spot: they are rare, and each kept one is memory.
inline constexpr size_t kMaxEntries = 64;
// The most dicts one thread keeps made, all shapes together (about 0.7 MB at five entries each),
// and the most shapes it follows; they stay until the thread exits.
inline constexpr size_t kMaxSpares = 512;
inline constexpr size_t kMaxShapes = 16;

// A new empty dict of these element types with room for `entries` without a rehash: one the
// calling thread made ahead, or (none of that shape, the stash off) one made now.
c10::impl::GenericDict take(const c10::TypePtr& key_type, const c10::TypePtr& value_type,
                            size_t entries);

// Makes, one at a time while `stop()` is false, as many dicts of each shape as the calling
// thread's take() handed out since its last complete refill, within the limits above. Returns
// how many it made. Nothing when the stash is off; never throws.
size_t refill(c10::function_ref<bool()> stop) noexcept;

// Process-wide, from MTC_DICT_STASH until set; off, take() always makes a new dict and refill()
// makes none.
void set_enabled(bool on);
bool enabled();

// Dicts the calling thread keeps made (tests).
size_t thread_spares();

}  // namespace mtc::detail::dict_stash
