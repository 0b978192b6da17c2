// A thread per GPU, all released at the same moment for every benchmark iteration: how the
// multi-GPU micro-benchmarks make several GPUs do the same thing at once in one process.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <vector>

namespace mtc::microbench {

// What each GPU's thread measured: its seconds in the iterations where every thread ran, in those
// where it ran alone (with mix_block), and the slowest thread's per every-GPU iteration.
struct ReleasedRun {
  std::vector<std::vector<double>> seconds;  // [gpu][iteration with every GPU]
  std::vector<std::vector<double>> alone;    // [gpu][iteration with that GPU alone]
  std::vector<double> slowest;
};

// Runs `work(g, alone)` on thread g (current device g) for g < gpus, every thread released at once
// for each iteration of `state`; work returns the seconds it measured, and is told whether it runs
// alone (so that it can keep apart what it records of each kind). The threads spin on a
// generation count, so they start within a microsecond or two of each other (a barrier's
// wake-ups would spread them by tens). The iteration's time is the slowest thread's (with
// mix_block, Google Benchmark's own time is therefore a mean over both kinds: read the counters).
// Whatever work(g) leaves in its own scope is dropped before the thread reports the iteration done,
// so the next one starts with every thread ready. The first exception stops the benchmark with
// SkipWithError naming the GPU. With mix_block > 0, each run of mix_block iterations is every
// thread or one thread alone, drawn by AloneDraw (equal shares, random order): every GPU's time
// alone and with the others, measured at nearby moments of the host (a GPU may be slower than
// GPU 0 alone by its own place on the host). The threads not released meanwhile spin. With 1 a
// GPU's copies come irregularly; with tens, each kind is a steady back-to-back loop for a few
// milliseconds, as a training loop's copies are.
ReleasedRun run_released(benchmark::State& state, int gpus,
                         const std::function<double(int, bool)>& work, int mix_block = 0);

// Counters gpuK_us (each GPU's median with every GPU), slowest_us (the median of the slowest
// thread's time over the every-GPU iterations) and, where there are times alone, gpuK_alone_us.
void report_released(benchmark::State& state, ReleasedRun& run);

// Where the GPUs' threads may run, for benchmarks that confine each GPU's threads to CPUs of its
// own: the CPUs the process may run on as it started; GPU g's share of them in `gpus` equal
// slices; and confining the calling thread to `cpus` (throws std::runtime_error if the system
// refuses).
const std::vector<int>& process_cpus();
std::vector<int> cpu_slice(int g, int gpus);
void confine_this_thread(const std::vector<int>& cpus);

}  // namespace mtc::microbench
