// Output dicts made ahead by the thread that will fill them, while it has nothing else to do.
//
// Making an output dict costs three allocations (c10's DictImpl, the order-keeping map's sentinel
// and ska's first table, of 4 slots) and, in its reserve(), a fourth and a free (the table for its
// entries: 1,120 bytes for five keys, past glibc's per-thread caches). The walking threads
// allocate what the caller frees, so their own caches stay empty and each request takes the
// arena's slow path. On the GPU host the output dicts were 78-88 % of the workers' samples in
// malloc and operator new, and those about a quarter of the walk, hot and after a busy gap alike
// (results/NOTES.md, 2026-11-29). Tables planned fuller than torch's reserve() plans them (five
// entries in 8 buckets, not 16: fewer lines written when made and read when freed) moved no whole
// copy in the in-process A/B (1 x H100, 2026-12-07) and were not kept.
//
// A worker whose spin ended without a task (worker_pool.h) tops up, before it sleeps, a stash of
// empty dicts of the shapes (element types, entries) its walks took, to as many of each as they
// took since its last complete refill, one at a time, and stops as soon as a task is queued. So a
// training loop's step, whose gap outlasts the spin, finds its dicts made; copies that come back
// to back keep the workers spinning and are not touched. Refilling as soon as a worker found no
// task, between such copies too, gained nothing measurable on an H200 host and was removed
// (results/NOTES.md, 2026-11-29); tried again with the previous result freed inside the copy, it
// gained nothing there either and made steps 8-28 % slower on an H100 host (2026-12-05). The
// walk then takes a made dict instead of allocating one. A thread that never refills (a caller
// that walks part of its own copy) makes its dicts on the spot.
//
// With the dict shelf on (the default, dict_shelf.h), a thread that does not walk makes them
// instead, into the pool's shelf: a refill then makes none and only reports to the shelf what the
// thread's walks used, and every walking thread, a caller's too, takes from the shelf through its
// stash.
//
// On by default: on an H200 host it made whole copies 4.7-11 % faster in three in-process A/B
// jobs, steps and alternating copies alike (results/NOTES.md, 2026-11-29). MTC_DICT_STASH=0 turns
// it off for a process (read with the worker pools' other settings, worker_pool_set.h),
// set_enabled() for benchmarks that compare the two in one process (BM_EngineCopy bits 262144
// and 1048576).
// Turned off, a worker frees its stash in its next idle moments, one dict at a time.
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/jit_type_base.h>
#include <c10/util/FunctionRef.h>

#include <cstddef>
#include <cstdint>

namespace mtc::detail::dict_stash {

// Dicts of more entries are always made on the spot: they are rare, and each kept one is memory.
inline constexpr size_t kMaxEntries = 64;
// The most entries one thread's kept dicts have room for, all shapes together: a table has 2-4
// slots of 56 bytes an entry, so at most about 1 MB a thread (819 dicts of five entries, 64 of
// 64). Kept until the thread exits or the stash is turned off.
inline constexpr size_t kMaxSpareEntries = 4096;
// The most shapes a thread follows; a shape with nothing kept gives its place up at a refill.
inline constexpr size_t kMaxShapes = 16;

// A new empty dict of these element types with room for `entries` without a rehash: one the
// calling thread made ahead, or (none of that shape, the stash off) one made now.
c10::impl::GenericDict take(const c10::TypePtr& key_type, const c10::TypePtr& value_type,
                            size_t entries);

// Makes, one at a time while `stop()` is false, dicts of each shape until the calling thread keeps
// as many as its take() handed out of that shape since its last complete refill, within the
// limits above. Returns how many it made. Off, frees the thread's stash, one dict at a time while
// `stop()` is false, and makes none. Never throws.
size_t refill(c10::function_ref<bool()> stop) noexcept;

// Process-wide; on unless set off or MTC_DICT_STASH=0 (read by the worker pools). Off, take()
// always makes a new dict and refill() makes none.
void set_enabled(bool on);
// The environment's setting, unless set_enabled() came first.
void enable_from_environment(bool on);
bool enabled();

// Dicts the calling thread keeps made (tests).
size_t thread_spares();
// Dicts handed out made ahead, by every thread since the process started (tests, benchmarks).
uint64_t served_total();

}  // namespace mtc::detail::dict_stash
