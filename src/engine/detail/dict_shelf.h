// Output dicts made ahead by a thread of their own, for the walks of the pools' later copies.
//
// A result is freed by the thread that holds it, usually the caller, while the next copy's walk
// runs on the workers. A dict a worker made (on the spot, or ahead in its stash, dict_stash.h) is
// memory of that worker's glibc arena: the caller's free of it takes the arena's lock while the
// walk allocates from it, and on the GPU host that free took 1.8x its time alone beside a walk
// whose stash was topped up, 4.6x beside one that made its dicts on the spot (results/NOTES.md,
// 2026-12-05). A dict made by a thread that does not walk is memory of that thread's arena, which
// no walk allocates from.
//
// So when a pool's workers go idle (their spin ended without a task, worker_pool.h), the process's
// dict-making thread puts on the pool's shelf, one at a time, as many dicts of each shape as one of
// the pool's copies used, until the shelf holds them or the pool's next copy starts (copy_started,
// from start_copy: the caller's free beside that copy then meets no allocation of this thread's).
// A walking thread that has none of a shape in its own stash takes a few from the shelf at once
// (one lock for several dicts) and reports there how many of the shape it used since it last
// reported; the shelf divides the use reported by the pool's copies since it last settled, so a
// stretch of copies back to back asks for one copy's worth, not the stretch's (asking for it all
// once filled a shelf with the first shape's dicts and left the others none). With none there a
// walking thread makes its own on the spot, as without the shelf, and looks again once the shelf
// was restocked or it has used kGrab more. Copies back to back keep the workers spinning and
// never wake the thread, as with the workers' own stash.
//
// Made by the caller instead, while it spun in get() for its copy, they were too few (12-29 of
// the reference batch's 128 a step) and the steps 10-16 % slower in the in-process A/B; made by
// this thread, the steps were 6-7 % faster, copies back to back the same (1 x H100, 2026-12-06),
// and with one copy's worth kept per shape 8-10 % faster, 125-126 of 128 dicts made ahead a step
// (1 x H200, 2026-12-06; results/NOTES.md).
//
// Restocked also while copies run back to back (a copy that found its pool not idle since the
// last asked the thread to make whatever the walks took, at once), the walks found 116-121 of 128
// made, yet back to back the copies were no shorter (a dict another core made is written again
// by the walk, its lines fetched from that core), and with the previous result freed beside the
// walk they were 26-34 % slower: the thread's allocations met that free. Not kept (1 x H100,
// 2026-12-07; results/NOTES.md).
//
// On unless MTC_DICT_SHELF=0 (read with the worker pools' other settings, worker_pool_set.h);
// set_enabled() for benchmarks that compare the two in one process. While on, the workers' own
// refills in their idle time (dict_stash.h) make no dicts, and MTC_DICT_STASH=0 turns both off.
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/jit_type_base.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mtc::detail::dict_shelf {

// Whether two element types are one (the same object, or equal types): how a thread's stash
// (dict_stash.h) and a shelf tell the shapes of dicts apart.
bool same_type(const c10::TypePtr& a, const c10::TypePtr& b);

// A walking thread takes at most this many dicts of a shape at a time.
inline constexpr size_t kGrab = 8;
// The most entries one shelf's dicts have room for, all shapes together (as a thread's stash).
inline constexpr size_t kMaxShelvedEntries = 4096;
// The most shapes a shelf follows; a shape with nothing shelved and nothing to keep gives its place
// up when a new one needs it.
inline constexpr size_t kMaxShapes = 16;

// Adds `used` dicts of this shape to the use reported on shelf `shelf` (a pool's impl_pool shard),
// then appends to `into` up to `most` (at most kGrab) of them from it. Returns how many it
// appended. Never throws: memory running out only leaves the use unreported.
size_t grab(size_t shelf, const c10::TypePtr& key_type, const c10::TypePtr& value_type,
            size_t entries, size_t used, size_t most,
            std::vector<c10::impl::GenericDict>& into) noexcept;

// How many times shelf `shelf` was restocked: a thread that found it empty looks again once this
// changed. Read without the lock.
uint64_t restocks(size_t shelf) noexcept;

// Makes one dict that shelf `shelf` is short of and shelves it; false when it is short of none
// (or full, or off). The dict-making thread's step; tests and benchmarks call it too. Never throws.
bool make_one(size_t shelf) noexcept;

// A pool whose workers found no task before they sleep: the process's dict-making thread makes
// what shelf `shelf` is short of, until the pool's next copy starts (copy_started). Never throws.
void pool_idle(size_t shelf) noexcept;
// A copy of the pool of shelf `shelf` starts (on the caller's thread, in start_copy).
void copy_started(size_t shelf) noexcept;

// Whether shelf `shelf` may be short of dicts (walks took from it or reported use since a refill
// last found nothing to make): a cheap look, without its lock.
bool wants(size_t shelf) noexcept;

// Process-wide; on unless set off or MTC_DICT_SHELF=0. Off, grab() appends none and make_one()
// makes none; set_enabled(false) frees the shelved dicts (empty ones: no tensor dies there).
void set_enabled(bool on);
// The environment's setting, unless set_enabled() came first.
void enable_from_environment(bool on);
bool enabled();

// Dicts the dict-making thread made, and the times a copy that started stopped it while the shelf
// was still short, since the process started (benchmarks).
uint64_t made_by_thread();
uint64_t cut_short();

// Dicts on shelf `shelf`, and how many it keeps, all shapes together, once the use reported so
// far is settled (tests).
size_t shelved(size_t shelf);
size_t kept_target(size_t shelf);

}  // namespace mtc::detail::dict_shelf
