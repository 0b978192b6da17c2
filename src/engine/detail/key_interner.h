// The string keys of the dicts the walk builds.
//
// An output dict used to hold the input dict's own key objects: the walking thread, usually a
// pool worker, counted a reference on each key, and the thread that freed the result, usually
// the caller, let go of it. Each key of each copy thus moved a cache line between two cores,
// twice, and after a training step's gap the free waited on main memory for every key. Containers
// freed by another thread than the one that built them cost ~51 us more for the reference batch
// (145 containers, 560 keys) on the GPU host (results/NOTES.md, 2026-11-28, afternoon).
//
// Instead each walking thread keeps one string of its own per distinct key text and hands out
// references to it that it counted in advance, up to kPrepaid at a time: the walking thread counts
// in batches on a line it then holds, instead of once per key on the input's, and the freeing
// thread's counts fall on the few lines of the keys in use.
// Counts stay exact: the thread's table holds one reference to each string and the unspent
// advance; at the thread's exit it lets go of both, so a string lives as long as an output dict
// that holds it.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstddef>
#include <cstdint>

namespace mtc::detail::key_interner {

// Distinct strings one thread keeps, the first met; keys beyond them are shared with the input as
// before (a structure whose keys change every copy fills the table once, then costs a lookup per
// key; the table's strings stay until the thread exits).
inline constexpr size_t kMaxStrings = 256;
// Longer keys are shared with the input: they are rare as dict keys, and each kept one is memory.
inline constexpr size_t kMaxKeyBytes = 64;
// The most references counted on a string at a time by the thread that hands them out (the
// advance doubles from one up to this).
inline constexpr uint32_t kPrepaid = 64;

// The key an output dict stores for the input dict's `key`: a string equal to it that the
// calling thread keeps, or (not a string, too long, the thread's table full, interning off) `key`
// itself.
c10::IValue output_key(const c10::IValue& key);

// Process-wide, on by default; off, every output dict shares the input's keys (for benchmarks
// that compare the two in one process).
void set_enabled(bool on);
bool enabled();

// How many distinct strings the calling thread keeps (tests).
size_t thread_strings();

}  // namespace mtc::detail::key_interner
