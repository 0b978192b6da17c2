#include "detail/worker_pool_set.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "detail/dict_shelf.h"
#include "detail/dict_stash.h"
#include "detail/driver_warmup.h"
#include "detail/impl_pool.h"

namespace mtc::detail {

namespace {
// `text` as an integer from `low` to `high` (digits only); `fallback` when null or empty.
int64_t parse_setting(const char* variable, const char* text, int64_t low, int64_t high,
                      int64_t fallback, const char* what) {
  if (text == nullptr || *text == '\0') return fallback;
  const std::string value(text);
  const bool digits = value.size() <= 7 && std::all_of(value.begin(), value.end(),
                                                       [](char c) { return c >= '0' && c <= '9'; });
  const int64_t parsed = digits ? std::stoll(value) : -1;
  TORCH_CHECK(parsed >= low && parsed <= high, "mtc: ", variable, "='", value, "' is not ", what,
              " (an integer from ", low, " to ", high, ")");
  return parsed;
}
}  // namespace

int parse_worker_threads(const char* text, int fallback) {
  return static_cast<int>(parse_setting(kWorkerThreadsVariable, text, 1, kMaxWorkerThreads,
                                        fallback, "a worker count"));
}

std::chrono::microseconds parse_worker_spin(const char* text, std::chrono::microseconds fallback) {
  return std::chrono::microseconds(parse_setting(kWorkerSpinVariable, text, 0, kMaxWorkerSpinUs,
                                                 fallback.count(), "a spin in microseconds"));
}

bool parse_switch(const char* variable, const char* text, bool fallback) {
  return parse_setting(variable, text, 0, 1, fallback ? 1 : 0, "0 or 1") == 1;
}

int WorkerCount::per_pool() const {
  if (fixed > 0) return fixed;
  return std::clamp(per_device, 1, std::max(hardware_threads / std::max(devices, 1), 1));
}

WorkerCount WorkerCount::from_environment() {
  WorkerCount count;
  count.fixed = parse_worker_threads(std::getenv(kWorkerThreadsVariable), 0);
  count.hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
  count.devices = c10::cuda::device_count();
  return count;
}

WorkerPoolSet& WorkerPoolSet::instance() {
  static WorkerPoolSet* set = [] {
    // A bad value fails the copy that made the pools first, as the other settings do.
    // Each switch is on unless its variable says 0.
    const auto on_unless_zero = [](const char* variable) {
      return parse_switch(variable, std::getenv(variable), true);
    };
    dict_stash::enable_from_environment(on_unless_zero(kDictStashVariable));
    dict_shelf::enable_from_environment(on_unless_zero(kDictShelfVariable));
    driver_warmup::enable_from_environment(on_unless_zero(kDriverWarmupVariable));
    return new WorkerPoolSet(
        WorkerCount::from_environment(),
        parse_worker_spin(std::getenv(kWorkerSpinVariable), WorkerPool::kDefaultSpin),
        on_unless_zero(kWorkerAnticipateVariable));
  }();
  return *set;
}

WorkerPoolSet::WorkerPoolSet(WorkerCount count, std::chrono::microseconds spin, bool anticipate)
    : count_(count), spin_us_(spin.count()), anticipate_(anticipate) {}

WorkerPoolSet::~WorkerPoolSet() {
  for (auto& slot : pools_) delete slot.load();
}

WorkerPool& WorkerPoolSet::for_device(int device) {
  const bool one_pool = one_pool_for_all_.load(std::memory_order_relaxed) && !count_.shared();
  size_t slot = 0;  // copies of no device, or every copy when MTC_WORKER_THREADS is set
  if (one_pool) {
    slot = kOnePoolSlot;
  } else if (!count_.shared() && device >= 0 && device < kMaxDevices) {
    slot = static_cast<size_t>(device) + 1;
  }
  if (WorkerPool* pool = pools_[slot].load(std::memory_order_acquire)) return *pool;
  std::lock_guard<std::mutex> lock(mutex_);
  if (WorkerPool* pool = pools_[slot].load(std::memory_order_relaxed)) return *pool;
  const int workers = count_.per_pool() * (one_pool ? std::max(count_.devices, 1) : 1);
  // A device's own pool warms that device's driver path ahead of a forecast copy
  // (driver_warmup.h); the pool of no device, or of every device, cannot tell which to warm.
  WorkerPool::EarlyWakeHook warm;
  if (slot != 0 && slot != kOnePoolSlot) {
    const auto index = static_cast<c10::DeviceIndex>(device);
    // The first copy that uses the device makes what warm() uses (driver_warmup::prepare).
    warm = [index] { driver_warmup::warm(index); };
  }
  auto* pool = new WorkerPool(workers, std::chrono::microseconds(spin_us_.load()),
                              anticipate_.load(), std::move(warm));
  pools_[slot].store(pool, std::memory_order_release);
  return *pool;
}

int WorkerPoolSet::pools() const {
  return static_cast<int>(std::count_if(pools_.begin(), pools_.end(),
                                        [](const auto& slot) { return slot.load() != nullptr; }));
}

int WorkerPoolSet::threads() const {
  int threads = 0;
  for (const auto& slot : pools_)
    if (const WorkerPool* pool = slot.load()) threads += pool->size();
  return threads;
}

void WorkerPoolSet::set_spin(std::chrono::microseconds spin) {
  std::lock_guard<std::mutex> lock(mutex_);  // a pool made meanwhile gets the new value
  spin_us_.store(spin.count());
  for (auto& slot : pools_)
    if (WorkerPool* pool = slot.load()) pool->set_spin(spin);
}

void WorkerPoolSet::set_anticipate(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  anticipate_.store(on);
  for (auto& slot : pools_)
    if (WorkerPool* pool = slot.load()) pool->set_anticipate(on);
}

WorkerPool& worker_pool_for(const c10::Device& target) {
  WorkerPoolSet& pools = WorkerPoolSet::instance();
  if (target.is_cuda()) return pools.for_device(target.index());
  // device_count() is cached by torch after its first call; current_device() asks the runtime.
  return pools.for_device(c10::cuda::device_count() > 0 ? c10::cuda::current_device() : -1);
}

namespace {
thread_local WorkerPool* t_current_pool = nullptr;
}  // namespace

WorkerPool& current_worker_pool() {
  return t_current_pool != nullptr ? *t_current_pool : worker_pool_for(c10::Device(c10::kCPU));
}

PoolScope::PoolScope(WorkerPool& pool)
    : previous_(std::exchange(t_current_pool, &pool)),
      previous_shard_(impl_pool::set_thread_shard(impl_pool::shard_of_pool(pool.id()))) {}

PoolScope::~PoolScope() {
  t_current_pool = previous_;
  impl_pool::set_thread_shard(previous_shard_);
}

}  // namespace mtc::detail
