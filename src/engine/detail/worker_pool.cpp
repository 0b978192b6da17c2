#include "detail/worker_pool.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <utility>

#include "mtc/nvtx.h"

namespace mtc::detail {

int parse_worker_threads(const char* text, int fallback) {
  if (text == nullptr || *text == '\0') return fallback;
  const std::string value(text);
  const bool digits = value.size() <= 4 && std::all_of(value.begin(), value.end(),
                                                       [](char c) { return c >= '0' && c <= '9'; });
  const int threads = digits ? std::stoi(value) : 0;
  TORCH_CHECK(threads >= 1 && threads <= kMaxWorkerThreads, "mtc: ", kWorkerThreadsVariable, "='",
              value, "' is not a worker count (an integer from 1 to ", kMaxWorkerThreads, ")");
  return threads;
}

int WorkerCount::for_devices(int devices_in_use) const {
  if (fixed > 0) return fixed;
  const int64_t wanted = int64_t{per_device} * std::max(devices_in_use, 1);
  return static_cast<int>(std::clamp<int64_t>(wanted, 1, std::max(hardware_threads, 1)));
}

WorkerCount WorkerCount::from_environment() {
  WorkerCount count;
  count.fixed = parse_worker_threads(std::getenv(kWorkerThreadsVariable), 0);
  count.hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
  return count;
}

WorkerPool& WorkerPool::instance() {
  static WorkerPool* pool = new WorkerPool(WorkerCount::from_environment(), kDefaultSpin);
  return *pool;
}

WorkerPool::WorkerPool(int threads, std::chrono::microseconds spin)
    : WorkerPool(WorkerCount{.fixed = threads}, spin) {}

WorkerPool::WorkerPool(WorkerCount count, std::chrono::microseconds spin)
    : spin_us_(spin.count()), count_(count) {
  grow_to(count_.for_devices(0));
}

void WorkerPool::grow_to(int threads) {
  std::lock_guard<std::mutex> lock(grow_mutex_);
  if (closed_) return;
  threads_.reserve(static_cast<size_t>(std::max<int>(threads, static_cast<int>(threads_.size()))));
  for (int i = static_cast<int>(threads_.size()); i < threads; ++i) {
    threads_.emplace_back([this, i] { run_worker(i); });
    size_.store(i + 1, std::memory_order_relaxed);
  }
}

void WorkerPool::use_device(int device) {
  if (device < 0 || device >= 128) return;
  const uint64_t bit = uint64_t{1} << (device % 64);
  std::atomic<uint64_t>& word = devices_[device / 64];
  if ((word.load(std::memory_order_relaxed) & bit) != 0) return;
  if ((word.fetch_or(bit) & bit) != 0) return;
  grow_to(count_.for_devices(devices_in_use()));
}

int WorkerPool::devices_in_use() const {
  return std::popcount(devices_[0].load()) + std::popcount(devices_[1].load());
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // Joined without the lock: a worker may be starting others (use_device) right now.
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(grow_mutex_);
    closed_ = true;
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void WorkerPool::submit(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  count_and_wake(1);
}

void WorkerPool::submit_copies(const Task& task, int copies) {
  if (copies <= 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int i = 0; i < copies; ++i) queue_.push_back(task);
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
  if (pending_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (queue_.empty()) return false;
  task = std::move(queue_.front());
  queue_.pop_front();
  pending_.fetch_sub(1, std::memory_order_release);
  return true;
}

void WorkerPool::run_worker(int index) {
  const std::string name = "mtc-worker-" + std::to_string(index);
  nvtx::name_current_thread(name.c_str());
  Task task;
  while (true) {
    if (try_pop(task)) {
      // Pass the wake-up on while more tasks wait than spinning workers can take.
      if (pending_.load() > spinners_.load()) wake_.notify_one();
      task();
      task = nullptr;
      continue;
    }
    // Spin a while before sleeping: copies tend to come in bursts (and parallel parts
    // right behind their orchestration), and a sleeping worker costs a wake-up.
    spinners_.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::microseconds(spin_us_.load(std::memory_order_relaxed));
    while (pending_.load(std::memory_order_acquire) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      for (int i = 0; i < 32; ++i) cpu_relax();
    }
    spinners_.fetch_sub(1);
    if (pending_.load() > 0) continue;
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_ && queue_.empty()) return;
  }
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
  // Helpers only touch `fn` while a part is unclaimed, and the caller waits for every part.
  for (int64_t h = 0; h < helpers; ++h) submit(work);
  work();
  while (state->done.load(std::memory_order_acquire) < parts) cpu_relax();
  // Taken out of the shared state, so the exception dies on this thread: a helper may drop the
  // state last, and the exception's own count lives in the (uninstrumented) C++ runtime, where
  // ThreadSanitizer cannot see that it ordered our reads of it before the free.
  if (std::exception_ptr error = std::exchange(state->error, nullptr))
    std::rethrow_exception(error);
}

}  // namespace mtc::detail
