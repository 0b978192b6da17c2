// Version counters for the engine's output tensors. Every tensor autograd may see carries one: a
// small heap object that TensorImpl's constructor allocates with the global operator new. An
// output is made on a walking thread and usually freed on the caller's, so glibc returns each
// counter to another thread's arena; on the GPU host the 528 counters of the reference batch were
// ~49 us of the ~140 us a training step spends freeing the previous result
// (results/notes/2026-11-25-evening.md). Here a dying output gives its counter back, and new
// outputs take those counters that no other tensor shares (a view of the dead output may), reset
// to version 0: no allocation or free per output, and counters move between threads in batches
// under one lock, like impl_pool's blocks, and in its shards when they are on
// (impl_pool::set_sharded): a thread takes from its impl_pool::thread_shard()'s list, and a counter
// goes back to the shard its output was made in, whichever thread frees it.
#pragma once

#include <c10/core/TensorImpl.h>

#include <cstddef>
#include <cstdint>

namespace mtc::detail::version_pool {

// Counters go from a thread's own list to the shared one this many at a time.
inline constexpr size_t kBatch = 64;
// Each shard's shared list keeps at most this many batches; counters beyond them are freed.
inline constexpr size_t kMaxSharedBatches = 256;

// A counter at version 0 that no other tensor holds: a given-back one, or a new one. Given-back
// counters that another tensor still shares are let go on the way.
c10::VariableVersion take();

// Takes an output's counter and keeps it for take() in `shard` (impl_pool's, the output's),
// without reading it: a counter a view still shares is let go by take(), which reads the counter
// anyway, not by the thread freeing the output. A disabled counter (an inference tensor's) is
// ignored. Another shard's counters wait on this thread until a whole batch can go there.
void give_back(c10::VariableVersion&& counter, size_t shard) noexcept;
// The same for the calling thread's shard.
void give_back(c10::VariableVersion&& counter) noexcept;

// Off, take() allocates a new counter and give_back() frees it, as torch does: for measurements
// that compare the two in one process. On by default; safe to switch at any time.
void set_enabled(bool on);
bool enabled();

// Counters waiting in every shard's shared list, and in one (for tests).
int64_t shared_counters();
int64_t shared_counters_in(size_t shard);

}  // namespace mtc::detail::version_pool
