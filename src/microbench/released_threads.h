// A thread per GPU, all released at the same moment for every benchmark iteration: how the
// multi-GPU micro-benchmarks make several GPUs do the same thing at once in one process.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <vector>

namespace mtc::microbench {

// What each GPU's thread measured: its seconds in the iterations where every thread ran, in those
// where it ran alone (with mix_alone), and the slowest thread's per iteration.
struct ReleasedRun {
  std::vector<std::vector<double>> seconds;  // [gpu][iteration with every GPU]
  std::vector<std::vector<double>> alone;    // [gpu][iteration with that GPU alone]
  std::vector<double> slowest;
};

// Runs `work(g)` on thread g (current device g) for g < gpus, every thread released at once for
// each iteration of `state`; work returns the seconds it measured. The threads spin on a
// generation count, so they start within a microsecond or two of each other (a barrier's
// wake-ups would spread them by tens). The iteration's time is the slowest thread's. Whatever
// work(g) leaves in its own scope is dropped before the thread reports the iteration done, so
// the next one starts with every thread ready. The first exception stops the benchmark with
// SkipWithError naming the GPU. With mix_block > 0, each run of mix_block iterations is at random
// either every thread or one thread chosen at random: every GPU's time alone and with the
// others, measured at nearby moments of the host (a GPU may be slower than GPU 0 alone by its own
// place on the host). With 1 a GPU's copies come irregularly; with tens, each kind is a steady
// back-to-back loop for a few milliseconds, as a training loop's copies are.
ReleasedRun run_released(benchmark::State& state, int gpus, const std::function<double(int)>& work,
                         int mix_block = 0);

// Counters gpuK_us (each GPU's median with every GPU), slowest_us (the median of the slowest per
// iteration) and, where there are times alone, gpuK_alone_us.
void report_released(benchmark::State& state, ReleasedRun& run);

}  // namespace mtc::microbench
