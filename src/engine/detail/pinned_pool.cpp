#include "detail/pinned_pool.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "detail/cuda_check.h"
#include "detail/round_up.h"

namespace mtc::detail {
namespace {

// A slab for `demand` bytes in flight: the demand, the headroom, whole pages.
int64_t slab_bytes_for(int64_t demand) {
  return round_up(demand + demand / PinnedPool::kHeadroomDivisor, PinnedPool::kSlabRounding);
}

void* cuda_host_allocate(int64_t bytes) {
  void* base = nullptr;
  // Portable so that copies to and from any GPU of the process may use the memory.
  MTC_CUDA_CHECK(cudaHostAlloc(&base, static_cast<size_t>(bytes), cudaHostAllocPortable));
  return base;
}
void cuda_host_free(void* base) noexcept { clear_cuda_error(cudaFreeHost(base)); }
}  // namespace

SlabSource cuda_host_slabs() { return SlabSource{&cuda_host_allocate, &cuda_host_free}; }

int64_t parse_pinned_pool_limit(const char* text) {
  if (text == nullptr || *text == '\0') return 0;
  const std::string value(text);
  const bool digits =
      std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
  errno = 0;
  char* end = nullptr;
  const unsigned long long parsed = digits ? std::strtoull(text, &end, 10) : 0;
  TORCH_CHECK(
      digits && errno == 0 && end != nullptr && *end == '\0' &&
          parsed <= static_cast<unsigned long long>(std::numeric_limits<int64_t>::max()),
      "mtc: ", kPinnedPoolLimitVariable, "='", value,
      "' is not a byte count (a non-negative decimal integer such as 268435456; 0: no limit)");
  return static_cast<int64_t>(parsed);
}

PinnedPool::PinnedPool(SlabSource source, int64_t limit_bytes) : source_(source) {
  TORCH_CHECK(limit_bytes >= 0, "mtc: pinned pool limit must be >= 0 bytes, got ", limit_bytes);
  limit_ = limit_bytes;
}

PinnedPool::~PinnedPool() {
  for (Slab& slab : slabs_)
    if (slab.base != nullptr) source_.free(slab.base);
}

bool PinnedPool::try_carve(int32_t slab_index, int64_t bytes, PinnedBlock& out) {
  Slab& slab = slabs_[slab_index];
  for (auto it = slab.free.begin(); it != slab.free.end(); ++it) {
    if (it->second < bytes) continue;
    const int64_t offset = it->first;
    const int64_t remaining = it->second - bytes;
    if (remaining > 0) {
      auto node = slab.free.extract(it);
      node.key() = offset + bytes;
      node.mapped() = remaining;
      slab.free.insert(std::move(node));
    } else {
      slab.free.erase(it);
    }
    out = PinnedBlock{slab.base + offset, bytes, slab_index, this};
    return true;
  }
  return false;
}

void PinnedPool::keep_spare_nodes(size_t count) {
  if (spare_nodes_.size() >= count) return;
  if (spare_nodes_.capacity() < count)
    spare_nodes_.reserve(std::max(count, 2 * spare_nodes_.capacity()));
  FreeExtents maker;
  while (spare_nodes_.size() < count) {
    maker.emplace(0, 0);
    spare_nodes_.push_back(maker.extract(maker.begin()));
  }
}

void PinnedPool::detach_slab(Slab& slab, Detached& detached) noexcept {
  detached.push_back(slab.base);
  reserved_ -= slab.bytes;
  --live_slabs_;
  ++slab_frees_;
  slab = Slab{};
}

void PinnedPool::free_detached(Detached& detached) noexcept {
  for (void* base : detached) source_.free(base);
  detached.clear();
}

int32_t PinnedPool::add_slab(std::unique_lock<std::mutex>& lock, int64_t bytes, int64_t minimum,
                             Detached& detached) {
  if (limit_ > 0 && reserved_ + minimum > limit_) release_idle_locked(detached);
  if (limit_ > 0) {
    if (reserved_ + minimum > limit_) return -1;
    bytes = std::max(minimum, std::min(bytes, limit_ - reserved_));
  }
  // The slab's entry and its first free extent are made first: once the memory is allocated,
  // nothing may fail before the slab is in the books.
  slabs_.reserve(slabs_.size() + 1);
  FreeExtents first;
  first.emplace(0, bytes);
  // Counted before the lock is let go, so that requests meanwhile see it against the limit;
  // and while growing_ is set, requests that do not fit wait for this slab instead of each
  // allocating one of their own (the workers of one copy ask at the same moment; no other slab
  // is added meanwhile, so the reserved entry stays free).
  reserved_ += bytes;
  growing_ = true;
  lock.unlock();
  free_detached(detached);
  void* base = nullptr;
  try {
    base = source_.allocate(bytes);
  } catch (...) {
    lock.lock();
    reserved_ -= bytes;  // the pool is as it was
    end_growth();
    throw;
  }
  lock.lock();
  end_growth();
  ++slab_allocations_;
  auto entry =
      std::find_if(slabs_.begin(), slabs_.end(), [](const Slab& s) { return s.base == nullptr; });
  if (entry == slabs_.end()) entry = slabs_.insert(slabs_.end(), Slab{});
  entry->base = static_cast<std::byte*>(base);
  entry->bytes = bytes;
  entry->free = std::move(first);
  ++live_slabs_;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return static_cast<int32_t>(entry - slabs_.begin());
}

void PinnedPool::end_growth() noexcept {
  growing_ = false;
  grown_.notify_all();
}

void PinnedPool::merge_idle_slabs(std::unique_lock<std::mutex>& lock, Detached& detached) {
  const int64_t target = slab_bytes_for(demand_since_merge_);
  detached.reserve(detached.size() + slabs_.size());  // detach_slab may not fail
  for (Slab& slab : slabs_)
    if (slab.base != nullptr) detach_slab(slab, detached);
  slabs_.clear();
  demand_since_merge_ = 0;
  // If the limit or the allocation says no, the request that follows grows the pool as usual.
  try {
    add_slab(lock, target, kGranularity, detached);
  } catch (const c10::Error&) {
  } catch (const std::bad_alloc&) {
  }
}

void PinnedPool::note_granted(int64_t bytes) {
  ++blocks_in_use_;
  in_use_ += bytes;
  peak_in_use_ = std::max(peak_in_use_, in_use_);
  demand_since_merge_ = std::max(demand_since_merge_, in_use_);
}

PinnedBlock PinnedPool::acquire_block(int64_t bytes) {
  TORCH_CHECK(bytes > 0, "mtc: pinned block of ", bytes, " bytes requested");
  bytes = round_up(bytes, kGranularity);
  Detached detached;
  // Slabs detached here are freed whatever happens, once the lock is let go (declared after this,
  // the lock goes first): a failure after a merge must not lose them.
  struct FreeDetached {
    PinnedPool& pool;
    Detached& slabs;
    ~FreeDetached() { pool.free_detached(slabs); }
  } free_detached_at_exit{*this, detached};
  std::unique_lock<std::mutex> lock(mutex_);
  PinnedBlock block;
  bool carved = false;
  for (;;) {
    if (!growing_ && in_use_ == 0 && live_slabs_ > 1) merge_idle_slabs(lock, detached);
    keep_spare_nodes(blocks_in_use_ + 1);  // for this block's release
    for (int32_t i = 0; !carved && i < static_cast<int32_t>(slabs_.size()); ++i)
      carved = slabs_[i].base != nullptr && try_carve(i, bytes, block);
    if (carved || !growing_) break;
    // Another request is adding a slab sized for everything in flight: try that one first.
    grown_.wait(lock, [this] { return !growing_; });
  }
  if (!carved) {
    // Room for everything in flight and this request: if the demand stays, one merge later
    // finds a pool that already fits it.
    const int32_t slab =
        add_slab(lock, std::max(bytes, slab_bytes_for(in_use_ + bytes)), bytes, detached);
    if (slab >= 0) {
      keep_spare_nodes(blocks_in_use_ + 1);  // releases meanwhile may have used some
      carved = try_carve(slab, bytes, block);
      TORCH_INTERNAL_ASSERT(carved);
    }
  }
  if (carved) note_granted(bytes);
  return block;  // then idle slabs the limit let go when no new slab came of it are freed
}

PinnedBlock PinnedPool::try_acquire(int64_t bytes) { return acquire_block(bytes); }

PinnedBlock PinnedPool::acquire(int64_t bytes) {
  const PinnedBlock block = acquire_block(bytes);
  if (block) return block;
  const PinnedPoolStats s = stats();
  TORCH_CHECK(false, "mtc: pinned staging of ", round_up(bytes, kGranularity),
              " bytes does not fit the pinned pool's limit of ", s.limit_bytes, " bytes (",
              s.reserved_bytes, " reserved, ", s.in_use_bytes,
              " in use by copies in flight); raise it with ", kPinnedPoolLimitVariable,
              " or mtc::set_pinned_pool_limit (0: no limit), or copy less at once");
}

void PinnedPool::release(const PinnedBlock& block) noexcept {
  if (!block) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Slab& slab = slabs_[block.slab];
  const int64_t offset = block.data - slab.base;
  const int64_t length = block.bytes;
  const auto next = slab.free.lower_bound(offset);
  const bool joins_next = next != slab.free.end() && offset + length == next->first;
  const auto prev = next == slab.free.begin() ? slab.free.end() : std::prev(next);
  const bool joins_prev = prev != slab.free.end() && prev->first + prev->second == offset;
  if (joins_prev) {
    prev->second += length + (joins_next ? next->second : 0);
    if (joins_next) slab.free.erase(next);
  } else if (joins_next) {
    auto node = slab.free.extract(next);  // the extent now starts at the block
    node.key() = offset;
    node.mapped() += length;
    slab.free.insert(std::move(node));
  } else if (!spare_nodes_.empty()) {
    auto node = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
    node.key() = offset;
    node.mapped() = length;
    slab.free.insert(next, std::move(node));
  } else {
    slab.free.emplace_hint(next, offset, length);  // not reached: acquire made a node for it
  }
  --blocks_in_use_;
  in_use_ -= block.bytes;
}

PinnedPoolStats PinnedPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  PinnedPoolStats s;
  s.reserved_bytes = reserved_;
  s.peak_reserved_bytes = peak_reserved_;
  s.in_use_bytes = in_use_;
  s.peak_in_use_bytes = peak_in_use_;
  s.limit_bytes = limit_;
  s.slabs = live_slabs_;
  s.slab_allocations = slab_allocations_;
  s.slab_frees = slab_frees_;
  return s;
}

int64_t PinnedPool::release_idle_locked(Detached& detached) {
  const int64_t before = reserved_;
  detached.reserve(detached.size() + slabs_.size());  // detach_slab may not fail
  for (Slab& slab : slabs_)
    if (slab.idle()) detach_slab(slab, detached);
  // Entries stay (blocks in use name their slab by index) but trailing free ones can go.
  while (!slabs_.empty() && slabs_.back().base == nullptr) slabs_.pop_back();
  if (live_slabs_ == 0) demand_since_merge_ = 0;
  return before - reserved_;
}

int64_t PinnedPool::release_idle() {
  Detached detached;
  int64_t freed = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    freed = release_idle_locked(detached);
  }
  free_detached(detached);
  return freed;
}

int64_t checked_pool_limit(int64_t bytes) {
  TORCH_CHECK(bytes >= 0,
              "mtc::set_pinned_pool_limit: the limit must be >= 0 bytes (0: no limit), got ",
              bytes);
  return bytes;
}

void PinnedPool::set_limit(int64_t bytes) {
  Detached detached;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = checked_pool_limit(bytes);
    if (limit_ > 0 && reserved_ > limit_) release_idle_locked(detached);
  }
  free_detached(detached);
}

void PinnedPool::reset_peaks() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_reserved_ = reserved_;
  peak_in_use_ = in_use_;
}

}  // namespace mtc::detail
