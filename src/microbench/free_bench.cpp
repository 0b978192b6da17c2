// What dropping a copy's result costs the thread that drops it: in a training step the previous
// batch's result is freed inside the step, and on the GPU host that free took ~90-100 us of a
// 242 us step of the reference batch (results/NOTES.md, 2026-11-25). Here the engine's walk
// builds the result (a CUDA target's new containers and packed output tensors: no CUDA call
// happens in the walk, so this runs without a GPU too) on a thread of its own, as a pool worker
// does, and only the free is timed, on the walking thread or on another one. Beside it, torch's
// own yardstick: as many views of one buffer made by one split, and their free.
#include <ATen/ops/empty.h>
#include <ATen/ops/split_with_sizes.h>
#include <benchmark/benchmark.h>
#include <c10/core/InferenceMode.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "detail/dict_shelf.h"
#include "detail/dict_stash.h"
#include "detail/impl_pool.h"
#include "detail/key_interner.h"
#include "detail/leaf_router.h"
#include "detail/outputs.h"
#include "detail/prefetch.h"
#include "detail/structure.h"
#include "detail/version_pool.h"
#include "mtc/copier.h"
#include "reference_batch.h"

namespace {

using Clock = std::chrono::steady_clock;

// Runs each job on one thread of its own, the caller waiting for it.
class OtherThread {
 public:
  OtherThread() : thread_([this] { run(); }) {}
  OtherThread(const OtherThread&) = delete;
  OtherThread& operator=(const OtherThread&) = delete;
  ~OtherThread() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  void run_and_wait(std::function<void()> job) {
    start(std::move(job));
    wait();
  }
  // Hands `job` over and returns at once; wait() returns once it is done.
  void start(std::function<void()> job) {
    const std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
    wake_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [this] { return !job_; });
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return quit_ || job_; });
      if (quit_) return;
      job_();
      job_ = nullptr;
      wake_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void()> job_;
  bool quit_ = false;
  std::thread thread_;
};

// What a result is made of, to tell the parts of its free apart (argument 2).
enum Parts {
  kWhole = 0,         // the engine's result for a CUDA target
  kNoVersionCounter,  // the same built in InferenceMode: no version counter per output tensor
  kContainersOnly,    // a CPU target: new containers around the input tensors
  kNoVersionPool,     // the whole result, its counters new and freed as torch does (version_pool)
  kSharedKeys,        // the whole result, its dicts holding the input's keys (no key_interner)
  kContainersSharedKeys,  // kContainersOnly with the input's keys
  kContainersNoLeaves,    // kContainersOnly with None where the tensors were: the containers' own
                          // free, without the input tensors' counts (which kContainersOnly's
                          // outputs share with the input)
  kNoFreeAhead,           // the whole result, its outputs not chained for the free (outputs.h)
  kPulled,                // the whole result, its tensors' lines asked for by the freeing thread
                          // once the walk is done (as a get() could while it waits), untimed
};

// Asks for the lines of every tensor's TensorImpl in `v`, for writing: they come to the calling
// thread's caches from wherever the walk left them.
void pull_tensor_lines(const c10::IValue& v) {
  if (v.isTensor()) {
    mtc::detail::prefetch::lines_for_write(v.unsafeToTensorImpl(), sizeof(c10::TensorImpl), 8);
  } else if (v.isList()) {
    for (const c10::IValue& item : v.toListRef()) pull_tensor_lines(item);
  } else if (v.isTuple()) {
    for (const c10::IValue& item : v.toTupleRef().elements()) pull_tensor_lines(item);
  } else if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) pull_tensor_lines(entry.value());
  }
}

// `v` with None in place of every tensor, its lists and dicts holding any value.
c10::IValue without_tensors(const c10::IValue& v) {
  if (v.isTensor()) return c10::IValue();
  if (v.isList()) {
    c10::impl::GenericList out(c10::AnyType::get());
    for (const c10::IValue& item : v.toListRef()) out.push_back(without_tensors(item));
    return out;
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    for (const c10::IValue& item : v.toTupleRef().elements())
      items.push_back(without_tensors(item));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (v.isGenericDict()) {
    const c10::impl::GenericDict in = v.toGenericDict();
    c10::impl::GenericDict out(in.keyType(), c10::AnyType::get());
    for (const auto& entry : in) out.insert(entry.key(), without_tensors(entry.value()));
    return out;
  }
  return v;
}

// What a result of `parts` is walked from, and to which target: the reference batch (None in place
// of its tensors for kContainersNoLeaves) to the GPU, or to the CPU for the containers-only parts
// (new containers around the input's own tensors).
struct ResultSource {
  c10::IValue data;
  c10::Device target;
};

ResultSource result_source(Parts parts, int multiplier) {
  const c10::IValue batch = mtc::microbench::make_reference_batch(multiplier);
  const bool containers_only =
      parts == kContainersOnly || parts == kContainersSharedKeys || parts == kContainersNoLeaves;
  return {parts == kContainersNoLeaves ? without_tensors(batch) : batch,
          containers_only ? c10::Device(c10::kCPU) : c10::Device(c10::kCUDA, 0)};
}

// The engine's switches that `parts` turns off, for as long as it lives (all back on after).
class PartsSwitches {
 public:
  explicit PartsSwitches(Parts parts)
      : pool_was_on_(mtc::detail::version_pool::enabled()),
        interning_was_on_(mtc::detail::key_interner::enabled()) {
    mtc::detail::version_pool::set_enabled(parts != kNoVersionPool);
    mtc::detail::key_interner::set_enabled(parts != kSharedKeys && parts != kContainersSharedKeys);
    mtc::detail::set_free_ahead(parts != kNoFreeAhead);
  }
  PartsSwitches(const PartsSwitches&) = delete;
  PartsSwitches& operator=(const PartsSwitches&) = delete;
  ~PartsSwitches() {
    mtc::detail::version_pool::set_enabled(pool_was_on_);
    mtc::detail::key_interner::set_enabled(interning_was_on_);
    mtc::detail::set_free_ahead(true);
  }

 private:
  bool pool_was_on_;
  bool interning_was_on_;
};

// The dict shelf on or off (dict_shelf.h) for as long as it lives; the process's setting after.
class ShelfSwitch {
 public:
  explicit ShelfSwitch(bool on) : was_on_(mtc::detail::dict_shelf::enabled()) {
    mtc::detail::dict_shelf::set_enabled(on);
  }
  ShelfSwitch(const ShelfSwitch&) = delete;
  ShelfSwitch& operator=(const ShelfSwitch&) = delete;
  ~ShelfSwitch() { mtc::detail::dict_shelf::set_enabled(was_on_); }

 private:
  bool was_on_;
};

// The engine's walk of `source` into `result`, as a pool worker runs it (no CUDA call is made);
// kNoVersionCounter's walk runs in InferenceMode.
void walk_result(const ResultSource& source, Parts parts, c10::IValue& result) {
  std::optional<c10::InferenceMode> no_version_counters;
  if (parts == kNoVersionCounter) no_version_counters.emplace(true);
  const mtc::CopyOptions options;
  mtc::CopyStats stats;
  mtc::detail::LeafRouter router(source.target, options, stats);
  mtc::detail::StructureCopier<mtc::detail::LeafRouter>(router).copy(source.data, result);
}

// Argument 0: batch multiplier (1: 528 tensors, 145 containers). Argument 1: 0 the result is
// freed by another thread than the one that built it (a training loop), 1 by the same thread.
// Argument 2: Parts.
void BM_FreeResult(benchmark::State& state) {
  const bool same_thread = state.range(1) == 1;
  const auto parts = static_cast<Parts>(state.range(2));
  const ResultSource source = result_source(parts, static_cast<int>(state.range(0)));
  OtherThread walker;
  const PartsSwitches switches(parts);
  for (auto _ : state) {
    c10::IValue result;
    walker.run_and_wait([&] { walk_result(source, parts, result); });
    double seconds = 0;
    auto free_result = [&] {
      const auto t0 = Clock::now();
      result = c10::IValue();
      seconds = mtc::microbench::seconds_since(t0);
    };
    if (same_thread) {
      walker.run_and_wait(free_result);
    } else {
      free_result();
    }
    state.SetIterationTime(seconds);
  }
}

// The step's critical path on the CPU side: the caller frees the previous result while a walk
// builds the next one on another thread. On the GPU host the caller's free took 188-221 us beside
// the walk against 71 us alone (results/notes/2026-12-05-morning.md); this tells, where it runs,
// how much of that the walk's company costs the free and the free's costs the walk.
// Argument 0: 0 the walking thread makes its dicts on the spot (copies back to back), 1 it tops
// up its dict stash between walks, as a worker does in a step's gap (dict_stash.h), 2 the engine's
// dict-making thread shelves them between walks (dict_shelf.h), as it does for an idle pool.
// Argument 1 (Company): the free after the walk has ended (alone), beside the walk, or beside a
// thread that only spins for as long as a walk (the machine's share of the slowdown: two busy
// cores, not what the two threads touch). Argument 2: what the results are made of and which of
// the engine's switches are off (Parts). Counters: free_us and walk_us, medians (with the
// spinning company, walk_us is the walk run alone just before); the iteration's time is the later
// of the two ends, the free's and its company's.
enum Company { kAlone = 0, kBesideWalk, kBesideSpin };

void BM_FreeBesideWalk(benchmark::State& state) {
  const bool stash_refilled = state.range(0) == 1;
  const bool shelved = state.range(0) == 2;
  const ShelfSwitch shelf_setting(shelved);
  const auto company = static_cast<Company>(state.range(1));
  const auto parts = static_cast<Parts>(state.range(2));
  const ResultSource source = result_source(parts, 1);
  OtherThread walker;
  const PartsSwitches switches(parts);
  std::vector<double> frees, walks;
  c10::IValue previous;
  auto build = [&](c10::IValue& into) {
    // Each walk is a copy to the shelf, which keeps one copy's worth (start_copy counts them).
    if (shelved) mtc::detail::dict_shelf::copy_started(mtc::detail::impl_pool::thread_shard());
    const auto t0 = Clock::now();
    walk_result(source, parts, into);
    walks.push_back(mtc::microbench::seconds_since(t0));
  };
  auto refill = [&] {
    if (stash_refilled)
      walker.run_and_wait([] { mtc::detail::dict_stash::refill([] { return false; }); });
    if (shelved) {
      // The walker's shelf is the thread's (both on the same shard).
      const size_t shelf = mtc::detail::impl_pool::thread_shard();
      mtc::detail::dict_shelf::pool_idle(shelf);
      const auto deadline = Clock::now() + std::chrono::milliseconds(100);
      while (mtc::detail::dict_shelf::wants(shelf) && Clock::now() < deadline)
        std::this_thread::yield();
    }
  };
  // As long as the walk alone took, once one has been timed.
  auto spin = [&] {
    const double seconds = walks.empty() ? 100e-6 : walks.back();
    const auto t0 = Clock::now();
    while (mtc::microbench::seconds_since(t0) < seconds) {
    }
  };
  walker.run_and_wait([&] { build(previous); });
  walks.clear();
  for (auto _ : state) {
    c10::IValue next;
    refill();
    if (company == kBesideSpin) walker.run_and_wait([&] { build(next); });
    const auto t0 = Clock::now();
    if (company == kBesideSpin) {
      walker.start(spin);
    } else {
      walker.start([&] { build(next); });
    }
    if (company == kAlone) walker.wait();
    const auto f0 = Clock::now();
    previous = c10::IValue();
    frees.push_back(mtc::microbench::seconds_since(f0));
    walker.wait();
    state.SetIterationTime(mtc::microbench::seconds_since(t0));
    previous = std::move(next);
    if (parts == kPulled) pull_tensor_lines(previous);
  }
  walker.run_and_wait([&] { previous = c10::IValue(); });
  state.counters["free_us"] = mtc::microbench::median_of(frees) * 1e6;
  state.counters["walk_us"] = mtc::microbench::median_of(walks) * 1e6;
}

// torch's own cost of as many tensors as the engine makes for the reference batch: one
// split_with_sizes of a byte buffer (on the GPU when there is one) into a view per tensor, made
// on a thread of its own, then freed there (argument 1) or by the caller (0). Counters: make_us
// and free_us, medians; the yardstick of BM_CreateOutputs and BM_FreeResult.
void BM_TorchViews(benchmark::State& state) {
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (const at::Tensor& leaf :
       mtc::microbench::tensor_leaves(mtc::microbench::make_reference_batch(1))) {
    sizes.push_back(static_cast<int64_t>(leaf.nbytes()));
    total += sizes.back();
  }
  const at::Tensor buffer = at::empty(
      {total}, at::TensorOptions().dtype(at::kByte).device(mtc::microbench::has_gpu()
                                                               ? c10::Device(c10::kCUDA, 0)
                                                               : c10::Device(c10::kCPU)));
  const bool same_thread = state.range(0) == 1;
  OtherThread maker;
  std::vector<double> make, frees;
  for (auto _ : state) {
    std::vector<at::Tensor> views;
    maker.run_and_wait([&] {
      const auto t0 = Clock::now();
      views = at::split_with_sizes(buffer, sizes);
      make.push_back(mtc::microbench::seconds_since(t0));
    });
    auto free_views = [&] {
      const auto t0 = Clock::now();
      views = {};
      frees.push_back(mtc::microbench::seconds_since(t0));
    };
    if (same_thread) {
      maker.run_and_wait(free_views);
    } else {
      free_views();
    }
    state.SetIterationTime(frees.back());
  }
  state.counters["views"] = static_cast<double>(sizes.size());
  state.counters["make_us"] = mtc::microbench::median_of(make) * 1e6;
  state.counters["free_us"] = mtc::microbench::median_of(frees) * 1e6;
}

}  // namespace

BENCHMARK(BM_FreeBesideWalk)
    ->ArgsProduct({{0, 1, 2},
                   {kAlone, kBesideWalk, kBesideSpin},
                   {kWhole, kContainersOnly, kContainersNoLeaves}})
    ->ArgsProduct({{1},
                   {kAlone, kBesideWalk},
                   {kNoVersionCounter, kNoVersionPool, kSharedKeys, kNoFreeAhead, kPulled}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchViews)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FreeResult)
    ->ArgsProduct({{1, 8}, {0, 1}, {kWhole}})
    ->ArgsProduct({{1},
                   {0, 1},
                   {kNoVersionCounter, kContainersOnly, kNoVersionPool, kSharedKeys,
                    kContainersSharedKeys, kContainersNoLeaves, kNoFreeAhead}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
