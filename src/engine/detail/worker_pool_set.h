// The process's worker pools: one for each CUDA device its copies use. GPUs driven at the same
// moment from one process (a thread per GPU) then share no task queue and no worker: each
// device's workers build only that device's outputs, from their own glibc heaps, and only that
// device's caller frees them. With one pool for every device, a worker serving GPU 0 and then
// GPU 2 had both callers freeing into its heap while it allocated for a third.
#pragma once

#include <c10/core/Device.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>

#include "detail/worker_pool.h"

namespace mtc::detail {

// The environment variable that fixes the worker count: one pool of that many workers then
// serves every device (as before the pools were per device); more workers fill large tensors'
// pinned chunks with more threads.
inline constexpr const char* kWorkerThreadsVariable = "MTC_WORKER_THREADS";
inline constexpr int kMaxWorkerThreads = 256;
// `text` as a worker count (1 .. kMaxWorkerThreads); `fallback` when null or empty. Throws
// c10::Error naming the variable for anything else.
int parse_worker_threads(const char* text, int fallback);

// The environment variable that sets how long an idle worker spins before it sleeps, in
// microseconds (default WorkerPool::kDefaultSpin, 200). A loop whose copies come a little more
// than that apart pays a wake-up (15-60 us on a shared host) at each; a longer spin spares it, at
// the price of a busy core per idle worker meanwhile. 0 sleeps at once.
inline constexpr const char* kWorkerSpinVariable = "MTC_WORKER_SPIN_US";
inline constexpr int64_t kMaxWorkerSpinUs = 1'000'000;
// `text` as a spin (0 .. kMaxWorkerSpinUs microseconds); `fallback` when null or empty. Throws
// c10::Error naming the variable for anything else.
std::chrono::microseconds parse_worker_spin(const char* text, std::chrono::microseconds fallback);

// The environment variable that turns off waking ahead of a forecast copy (worker_pool.h): 0
// off, 1 on (the default). Off, a loop whose copies come further apart than the spin pays a
// worker's wake-up at each copy and another for each of its walk's helpers.
inline constexpr const char* kWorkerAnticipateVariable = "MTC_WORKER_ANTICIPATE";

// The environment variable that turns off output dicts made ahead by idle workers (dict_stash.h):
// 0 off, 1 on (the default). Read when the pools are made.
inline constexpr const char* kDictStashVariable = "MTC_DICT_STASH";

// The environment variable that turns off output dicts made for the pools' walks by a thread that
// does not walk (dict_shelf.h; the workers then make their own): 0 off, 1 on (the default). Read
// when the pools are made.
inline constexpr const char* kDictShelfVariable = "MTC_DICT_SHELF";

// The environment variable that turns off the driver warm-up ahead of a forecast copy
// (driver_warmup.h): 0 off, 1 on (the default). Read when the pools are made.
inline constexpr const char* kDriverWarmupVariable = "MTC_DRIVER_WARMUP";

// `text`, the value of the switch `variable` (one of the four above), as 0 or 1; `fallback` when
// null or empty. Throws c10::Error naming the variable for anything else.
bool parse_switch(const char* variable, const char* text, bool fallback);

// Workers for each CUDA device: one copy of the reference batch walks its structure on four
// threads (its own and three helpers).
inline constexpr int kWorkersPerDevice = 4;

struct WorkerCount {
  int fixed = 0;  // 0: a pool of per_device workers for each device
  int per_device = kWorkersPerDevice;
  int hardware_threads = 1;
  int devices = 0;  // CUDA devices the process sees

  // One pool shared by every device (a fixed count), or one per device.
  bool shared() const { return fixed > 0; }
  // Workers in each pool: `fixed` if set (more than the hardware threads when asked for),
  // otherwise `per_device`, but never so many that the pools of all devices together would
  // outnumber the hardware threads; at least one.
  int per_pool() const;
  // MTC_WORKER_THREADS when set (throws c10::Error naming it when it is not a worker count),
  // this machine's hardware threads and CUDA devices.
  static WorkerCount from_environment();
};

class WorkerPoolSet {
 public:
  // Device indices are below this (c10::DeviceIndex is 8 bits).
  static constexpr int kMaxDevices = 128;

  // The process's pools, sized by WorkerCount::from_environment(), spinning for
  // MTC_WORKER_SPIN_US, waking ahead of forecast copies unless MTC_WORKER_ANTICIPATE=0, output
  // dicts made ahead unless MTC_DICT_STASH=0 (by a thread that does not walk unless
  // MTC_DICT_SHELF=0), the driver warmed ahead of a forecast copy unless MTC_DRIVER_WARMUP=0 (each
  // throws c10::Error naming the variable when it is malformed). Never destroyed, so copies still
  // in flight at exit do not race a joining destructor.
  static WorkerPoolSet& instance();

  WorkerPoolSet(WorkerCount count, std::chrono::microseconds spin, bool anticipate = true);
  WorkerPoolSet(const WorkerPoolSet&) = delete;  // owns its pools
  WorkerPoolSet& operator=(const WorkerPoolSet&) = delete;
  ~WorkerPoolSet();

  // The pool of CUDA device `device` (see worker_pool_for), or of copies that use no device (-1,
  // or any index that is not a device's); made on first use (starting a worker costs ~35 us,
  // once). After that, one atomic load.
  WorkerPool& for_device(int device);
  // Pools made so far, and their workers.
  int pools() const;
  int threads() const;
  // How long idle workers spin before sleeping, in every pool, the ones made later too (for
  // benchmarks that compare settings).
  void set_spin(std::chrono::microseconds spin);
  std::chrono::microseconds spin() const { return std::chrono::microseconds(spin_us_.load()); }
  // Whether sleeping workers wake ahead of a forecast copy, in every pool, the ones made later
  // too (for benchmarks that compare settings).
  void set_anticipate(bool on);
  bool anticipate() const { return anticipate_.load(); }
  // For benchmarks that compare the two designs in one process: while on, every device's copies
  // (and those of no device) use one pool of as many workers as all devices' pools together
  // (per_pool() for each device the process sees), made on first use and kept; off goes back to
  // the pools per device. Copies already started keep the pool they started on.
  void set_one_pool_for_all(bool on) { one_pool_for_all_.store(on); }

 private:
  const WorkerCount count_;
  std::atomic<int64_t> spin_us_;
  std::atomic<bool> anticipate_;
  std::mutex mutex_;  // held while a pool is made
  std::atomic<bool> one_pool_for_all_{false};
  // Slot 0: copies that use no device (and, when shared, every copy); slot d + 1: device d; the
  // last: the one pool of set_one_pool_for_all.
  static constexpr size_t kOnePoolSlot = kMaxDevices + 1;
  std::array<std::atomic<WorkerPool*>, kMaxDevices + 2> pools_{};
};

// The pool of a copy to `target`: a CUDA target's device's; for a CPU target, the calling
// thread's current CUDA device's (a process that drives several GPUs has a thread per GPU, and
// that thread's copies back come from its GPU), or no device's in a process without GPUs.
WorkerPool& worker_pool_for(const c10::Device& target);

// The pool of the work the calling thread is doing: while a PoolScope lives on the thread (a
// worker's whole life, a copy job's run, a caller's wait for its copy), its pool; otherwise
// worker_pool_for a CPU target. Staging fills and uploads use it, so their helpers are the copy's
// own device's workers.
WorkerPool& current_worker_pool();

// Also makes the pool's shard of the TensorImpl pool the thread's (impl_pool.h), so that (with the
// shards on) the outputs its work makes come from blocks that pool's callers freed.
class PoolScope {
 public:
  explicit PoolScope(WorkerPool& pool);
  PoolScope(const PoolScope&) = delete;  // restores what it replaced, once
  PoolScope& operator=(const PoolScope&) = delete;
  ~PoolScope();

 private:
  WorkerPool* previous_;
  size_t previous_shard_;
};

}  // namespace mtc::detail
