#include "detail/version_pool.h"

#include <array>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "detail/impl_pool.h"

namespace mtc::detail::version_pool {
namespace {

using Batch = std::array<c10::VariableVersion, kBatch>;

// The shared lists follow impl_pool's shards (one for the process unless they are on): a counter
// goes back to the shard of the output that held it, so a GPU's workers take back the counters
// of the results they made, whichever thread frees them. A shard's lock and list sit on lines of
// their own.
struct alignas(128) Shard {
  std::mutex mutex;
  std::vector<Batch> batches;
};
using Shared = std::array<Shard, impl_pool::kShards>;

// Never destroyed: threads may give counters back while the process exits.
Shared& shared() {
  static Shared* s = new Shared;
  return *s;
}

size_t own_shard_index() { return impl_pool::sharded() ? impl_pool::thread_shard() : 0; }

// Adds a full batch to `shard`'s list, or lets it go (freed with `batch`) when the list is full.
void push_batch(size_t shard, Batch batch) noexcept {
  Shard& s = shared()[shard];
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.batches.size() >= kMaxSharedBatches) return;
  try {
    s.batches.push_back(std::move(batch));
  } catch (...) {
  }
}

std::atomic<bool> pool_on{true};

// Set once the thread's own list is gone (thread exit): give_back() then lets counters go.
thread_local bool t_exited = false;

// The calling thread's counters, the most recently given back last.
struct Local {
  std::array<c10::VariableVersion, 2 * kBatch> counters;
  size_t count = 0;
  size_t shard = 0;  // the shard `counters` belong to: the thread's when they were kept

  // Moves the oldest kBatch counters (or all, if fewer) to the shared list.
  void hand_over() noexcept {
    const size_t n = std::min(count, kBatch);
    Batch batch;
    for (size_t i = 0; i < n; ++i) batch[i] = std::move(counters[i]);
    for (size_t i = n; i < count; ++i) counters[i - n] = std::move(counters[i]);
    count -= n;
    if (n < kBatch) return;  // a partial batch (a thread exiting): freed with `batch`
    push_batch(shard, std::move(batch));
  }

  // Counters of other shards' outputs freed by this thread, gathered per shard into batches.
  std::array<Batch, impl_pool::kShards> foreign;
  std::array<size_t, impl_pool::kShards> foreign_count{};

  void give_back_to(size_t home, c10::VariableVersion&& counter) noexcept {
    foreign[home][foreign_count[home]++] = std::move(counter);
    if (foreign_count[home] < kBatch) return;
    foreign_count[home] = 0;
    push_batch(home, std::move(foreign[home]));
  }

  // Makes `own` the shard of the kept counters. A thread whose shard changed sends the counters
  // it kept back to the shard it left, as other shards' are, and takes up those of its new shard
  // that were waiting for a whole batch (fewer than one; none kept after the flush). With the
  // shards off they are all shard 0's, as impl_pool's blocks are.
  void follow(size_t own) noexcept {
    if (own == shard) return;
    if (!impl_pool::sharded()) {
      shard = own;
      return;
    }
    for (size_t i = 0; i < count; ++i) give_back_to(shard, std::move(counters[i]));
    for (size_t i = 0; i < foreign_count[own]; ++i) counters[i] = std::move(foreign[own][i]);
    count = foreign_count[own];
    foreign_count[own] = 0;
    shard = own;
  }

  ~Local() {
    t_exited = true;
    while (count > 0) hand_over();
  }
};
thread_local Local t_local;

}  // namespace

c10::VariableVersion take() {
  if (!t_exited && pool_on.load(std::memory_order_relaxed)) {
    Local& local = t_local;
    local.follow(own_shard_index());
    for (;;) {
      if (local.count == 0) {
        Shard& s = shared()[local.shard];
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.batches.empty()) break;
        for (size_t i = 0; i < kBatch; ++i) local.counters[i] = std::move(s.batches.back()[i]);
        local.count = kBatch;
        s.batches.pop_back();
      }
      c10::VariableVersion counter = std::move(local.counters[--local.count]);
      // A counter that a view of its dying output still shares stays with the view (dropped
      // here): reusing it would tie the view's version to an unrelated new output. unique()
      // cannot turn false once true: only a holder could share the counter again, and the pool
      // is the only one. Checked here rather than where the output died: the count sits beside
      // the version read below (on its line, unless the small object straddles two), and the
      // freeing thread, a copy's slower side in a loop, need not read the counter at all.
      if (!counter.unique()) continue;
      // unique() reads the count relaxed, which orders nothing after the last other holder's
      // use; none is needed: everything a counter holds (its version, its counts) is atomic.
      // Only written when it changed: the counter's line was last in the releasing core's cache.
      if (counter.current_version() != 0) counter.set_version(0);
      return counter;
    }
  }
  return c10::VariableVersion(/*version=*/0);
}

void give_back(c10::VariableVersion&& counter, size_t shard) noexcept {
  // Not kept, `counter` stays with its tensor and goes with it. Kept whether or not another
  // tensor shares it (take() decides): nothing here reads the counter itself.
  if (!counter.enabled() || t_exited || !pool_on.load(std::memory_order_relaxed)) return;
  Local& local = t_local;
  const size_t own = own_shard_index();
  local.follow(own);
  const size_t home = impl_pool::sharded() ? shard % impl_pool::kShards : 0;
  if (home != own) return local.give_back_to(home, std::move(counter));
  // Keep up to two batches for this thread's own outputs; hand the oldest on.
  if (local.count == local.counters.size()) local.hand_over();
  local.counters[local.count++] = std::move(counter);
}

void give_back(c10::VariableVersion&& counter) noexcept {
  give_back(std::move(counter), impl_pool::thread_shard());
}

void set_enabled(bool on) { pool_on.store(on, std::memory_order_relaxed); }

bool enabled() { return pool_on.load(std::memory_order_relaxed); }

int64_t shared_counters_in(size_t shard) {
  Shard& s = shared()[shard % impl_pool::kShards];
  std::lock_guard<std::mutex> lock(s.mutex);
  return static_cast<int64_t>(s.batches.size() * kBatch);
}

int64_t shared_counters() {
  int64_t counters = 0;
  for (size_t shard = 0; shard < impl_pool::kShards; ++shard) counters += shared_counters_in(shard);
  return counters;
}

}  // namespace mtc::detail::version_pool
