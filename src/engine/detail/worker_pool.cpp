#include "detail/worker_pool.h"

#include <c10/util/Exception.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <utility>

#include "detail/dict_shelf.h"
#include "detail/dict_stash.h"
#include "detail/impl_pool.h"
#include "detail/worker_pool_set.h"
#include "mtc/nvtx.h"

namespace mtc::detail {

using Clock = ArrivalForecast::Clock;

namespace {
std::atomic<int> pools_made{0};
std::atomic<bool> warm_first{true};
}  // namespace

void WorkerPool::set_warm_worker_first(bool on) { warm_first.store(on); }
bool WorkerPool::warm_worker_first() { return warm_first.load(std::memory_order_relaxed); }

WorkerPool::WorkerPool(int threads, std::chrono::microseconds spin, bool anticipate,
                       EarlyWakeHook on_early_wake)
    : id_(pools_made.fetch_add(1)),
      on_early_wake_(std::move(on_early_wake)),
      spin_us_(spin.count()),
      anticipate_(anticipate) {
  threads_.reserve(static_cast<size_t>(std::max(threads, 1)));
  for (int i = 0; i < std::max(threads, 1); ++i)
    threads_.emplace_back([this, i] { run_worker(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool WorkerPool::set_cpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpus.empty()) {
    const long online = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < std::min<long>(online, CPU_SETSIZE); ++c) CPU_SET(c, &set);
  }
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  bool ok = true;
  for (std::thread& t : threads_)
    ok = pthread_setaffinity_np(t.native_handle(), sizeof(set), &set) == 0 && ok;
  return ok;
}

void WorkerPool::set_anticipate(bool on) {
  {
    // Under the lock, so that no sleeper is between reading the setting and waiting.
    std::lock_guard<std::mutex> lock(mutex_);
    anticipate_.store(on);
  }
  wake_.notify_all();  // sleepers recompute when to wake
}

void WorkerPool::submit(Task task, bool starts_copy) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    forecast_.record(Clock::now(), 1, starts_copy);
  }
  count_and_wake(1);
}

void WorkerPool::submit_copies(const Task& task, int copies) {
  if (copies <= 0) return;
  int queued = 0;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    forecast_.record(Clock::now(), copies, /*starts_copy=*/false);
    for (; queued < copies; ++queued) queue_.push_back(task);
  } catch (...) {
    count_and_wake(queued);  // queued tasks must be counted, or nothing would ever take them
    throw;
  }
  count_and_wake(copies);
}

void WorkerPool::count_and_wake(int64_t added) {
  // Spinning workers see `pending_` without a wake-up; wake a sleeper only when they are
  // too few for the tasks waiting (the woken worker passes the wake-up on, see run_worker).
  // Sequentially consistent on both sides (Dekker): a worker that stops spinning re-reads
  // `pending_` after leaving `spinners_`, so either it sees the task or we see it gone.
  const int64_t pending = pending_.fetch_add(added) + added;
  if (spinners_.load() < pending) wake_.notify_one();
}

bool WorkerPool::try_run_one() {
  Task task;
  if (!try_pop(task)) return false;
  task();
  return true;
}

bool WorkerPool::try_pop(Task& task) {
  // A task is queued (under the lock) before it is counted, and counts are only taken here, one
  // per task: a thread whose claim succeeded finds its task in the queue.
  int64_t pending = pending_.load(std::memory_order_acquire);
  do {
    if (pending <= 0) return false;
  } while (!pending_.compare_exchange_weak(pending, pending - 1));
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_INTERNAL_ASSERT(!queue_.empty(), "mtc: a claimed worker task is missing from the queue");
  task = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

namespace {
thread_local bool t_worker = false;
}  // namespace

bool WorkerPool::on_worker_thread() { return t_worker; }

void WorkerPool::run_worker(int index) {
  t_worker = true;
  const std::string name = "mtc-worker-" + std::to_string(index);
  nvtx::name_current_thread(name.c_str());
  const PoolScope scope(*this);  // the helpers of the work it runs come from this pool too
  Task task;
  EarlyWake early;
  bool warm = false;  // this worker ran the early-wake hook and has taken no task since
  const auto leave_warm = [&] {
    if (std::exchange(warm, false)) warm_spinner_.store(false, std::memory_order_relaxed);
  };
  while (true) {
    if (try_pop(task)) {
      leave_warm();
      // Pass the wake-up on while more tasks wait than spinning workers can take.
      if (pending_.load() > spinners_.load()) wake_.notify_one();
      task();
      task = nullptr;
      continue;
    }
    // Spin a while before sleeping: copies tend to come in bursts (and parallel parts
    // right behind their orchestration), and a sleeping worker costs a wake-up.
    spinners_.fetch_add(1);
    const auto task_queued = [this] {
      return pending_.load(std::memory_order_acquire) != 0 || stopping_.load();
    };
    const auto deadline = std::max(
        early.spin_until,
        Clock::now() + std::chrono::microseconds(spin_us_.load(std::memory_order_relaxed)));
    early.spin_until = {};
    // The warm worker looks for a task more often than the others, which leave it a new one
    // for a moment (set_warm_worker_first).
    const int pauses = warm ? 4 : 32;
    Clock::time_point task_seen{};
    while (Clock::now() < deadline) {
      if (task_queued()) {
        if (warm || stopping_.load() || !warm_spinner_.load(std::memory_order_relaxed)) break;
        const Clock::time_point now = Clock::now();
        if (task_seen == Clock::time_point{}) {
          task_seen = now;
        } else if (now - task_seen >= kWarmHeadStart) {
          break;
        }
      }
      for (int i = 0; i < pauses; ++i) cpu_relax();
    }
    if (pending_.load() == 0) {
      // The spin ended without a task: before sleeping, the output dicts this thread's next walk
      // will want (dict_stash.h), until a task comes. Only here: copies that come back to back
      // keep the workers spinning, and never wait behind this (making them as soon as a worker
      // found no task was measured twice: no gain, and slower steps; dict_stash.h). Still
      // counted as spinning: a task queued meanwhile is taken after at most one dict, without
      // waking a sleeper.
      dict_stash::refill(task_queued);
      // With the shelf on, the dict-making thread makes them instead (dict_shelf.h).
      if (dict_shelf::enabled()) dict_shelf::pool_idle(impl_pool::thread_shard());
    }
    spinners_.fetch_sub(1);
    if (pending_.load() > 0) continue;
    leave_warm();
    std::unique_lock<std::mutex> lock(mutex_);
    if (!sleep(lock, early)) return;
    if (std::exchange(early.run_hook, false) && on_early_wake_) {
      lock.unlock();
      on_early_wake_();
      if (warm_worker_first()) {
        warm = true;
        warm_spinner_.store(true, std::memory_order_relaxed);
      }
    }
  }
}

bool WorkerPool::sleep(std::unique_lock<std::mutex>& lock, EarlyWake& early) {
  while (!stopping_ && queue_.empty()) {
    const std::optional<ArrivalForecast::Window> window =
        anticipate_.load(std::memory_order_relaxed) ? forecast_.next() : std::nullopt;
    if (window && window->burst != early.burst) {
      // A new forecast: wake early only if the last copy's tasks leave a worker's share of it.
      if (early_burst_ != window->burst) {
        early_burst_ = window->burst;
        early_wakers_ = 0;
      }
      early.burst = window->burst;
      early.claimed = early_wakers_ < window->tasks;
      early.first = early.claimed && early_wakers_ == 0;
      if (early.claimed) ++early_wakers_;
    }
    if (!window || window->burst != early.burst || !early.claimed) {
      wake_.wait(lock);
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (now < window->wake_at) {
      wake_.wait_until(lock, window->wake_at);
      continue;
    }
    early.claimed = false;
    if (now < window->spin_until) {
      early.spin_until = window->spin_until;
      early.run_hook = early.first;
      anticipated_wakes_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return !(stopping_ && queue_.empty());
}

void WorkerPool::parallel_for(int64_t parts, const std::function<void(int64_t)>& fn) {
  if (parts <= 0) return;
  if (parts == 1) {
    fn(0);
    return;
  }
  // Shared with helpers that may start after every part is done and the caller has left.
  struct State {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex error_mutex;
    std::exception_ptr error;
  };
  auto state = std::make_shared<State>();
  auto work = [state, parts, &fn] {
    for (int64_t i; (i = state->next.fetch_add(1)) < parts;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(state->error_mutex);
        if (!state->error) state->error = std::current_exception();
      }
      state->done.fetch_add(1, std::memory_order_acq_rel);
    }
  };
  const int64_t helpers = std::min<int64_t>(parts - 1, size());
  // Helpers only touch `fn` while a part is unclaimed, and the caller waits for every part. A
  // helper that could not be queued (out of memory) is no failure: this thread runs the parts
  // it would have, and must still wait for those that helpers queued before it took.
  try {
    // Parts of a copy under way (a GPU->CPU copy's outputs come a DMA after its start): they
    // must not count as copies of their own, or the forecast would see irregular intervals.
    for (int64_t h = 0; h < helpers; ++h) submit(work, /*starts_copy=*/false);
  } catch (...) {
  }
  work();
  while (state->done.load(std::memory_order_acquire) < parts) cpu_relax();
  // Taken out of the shared state, so the exception dies on this thread: a helper may drop the
  // state last, and the exception's own count lives in the (uninstrumented) C++ runtime, where
  // ThreadSanitizer cannot see that it ordered our reads of it before the free.
  if (std::exception_ptr error = std::exchange(state->error, nullptr))
    std::rethrow_exception(error);
}

}  // namespace mtc::detail
