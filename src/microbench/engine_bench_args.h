// The cases of BM_EngineCopy (engine_bench.cpp): its arguments, {batch multiplier, option bits},
// the bits' names and meanings (below) and the lists of cases registered for each direction
// (engine_bench_args.cpp). A case's name shows its bits as one sum (BM_EngineCopy<...>/1/399),
// the number the notes and results quote, so each bit's value is written out in decimal.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

namespace mtc::microbench {

// BM_EngineCopy's option bits: a case asks for the sum of those it sets.
namespace engine_bits {
inline constexpr int64_t kPack = 1;              // CPU tensors packed (pack_cpu_tensors)
inline constexpr int64_t kPinnedStaging = 2;     // through pinned staging (use_pinned_staging)
inline constexpr int64_t kBackgroundThread = 4;  // the copy on a background thread
// An idle gap of 5 ms before each copy, its workers asleep when it comes (a training step's one
// copy), instead of back-to-back copies that find them spinning.
inline constexpr int64_t kIdleGap = 8;
inline constexpr int64_t kUnsplitWalk = 16;   // the walk never split across the pool
inline constexpr int64_t kFewerWalkers = 32;  // one walking thread per 256 leaves, not 128
inline constexpr int64_t kSpin2ms = 64;       // idle workers spin 2 ms, not 200 us
inline constexpr int64_t kFreshBatch = 128;   // a fresh batch each copy (a rotation of 8)
// The previous result freed inside the timed copy, right after start_copy (a training step drops
// the last batch when the next one arrives), not after the clock stopped.
inline constexpr int64_t kFreePrevious = 256;
inline constexpr int64_t kNoWakeAhead = 512;       // workers never wake ahead of a copy
inline constexpr int64_t kBusyGap = 1024;          // the gap busy over 32 MiB, not asleep
inline constexpr int64_t kShortGap = 2048;         // the gap 200 us instead of 5 ms
inline constexpr int64_t kNoVersionPool = 4096;    // no version_pool
inline constexpr int64_t kSpin10ms = 8192;         // idle workers spin 10 ms, through a step's gap
inline constexpr int64_t kMoreWalkers = 16384;     // one walking thread per 64 leaves, not 128
inline constexpr int64_t kSpinningCaller = 32768;  // the caller spins through the gap
inline constexpr int64_t kFreeAfterGet = 65536;    // with kFreePrevious: freed after get() instead
inline constexpr int64_t kInputKeys = 131072;      // output dicts share the input's keys
// Output dicts made ahead (dict_stash.h). In the notes of 2026-11-29 and before, cases without
// this bit had none; now they follow MTC_DICT_STASH, on by default.
inline constexpr int64_t kDictsAhead = 262144;
// Input containers' element types copied, not read in place. Before 2026-12-07 09:40 UTC this
// bit asked for, each measured without a gain and removed: output dicts' tables as torch plans
// them, the shelf restocked while copies run back to back, output dicts' keys of one
// generation, outputs' lines demoted to the shared cache, the dict stash's at-once refill.
inline constexpr int64_t kCopiedTypes = 524288;
inline constexpr int64_t kNoDictsAhead = 1048576;    // no output dicts made ahead
inline constexpr int64_t kPoolStream = 2097152;      // a current stream from torch's pool
inline constexpr int64_t kNoDriverWarmup = 4194304;  // no driver warm-up ahead of a copy
inline constexpr int64_t kNoPrefetch = 8388608;      // no prefetching in the walk and the fill
// With kFreePrevious: the previous result's tensors offered to the copy as its outputs
// (ReusableOutputs, offered_outputs.h), instead of freed.
inline constexpr int64_t kReuseOutputs = 16777216;
// The worker that warmed the driver gets no first claim on the copy's job.
inline constexpr int64_t kNoWarmWorkerFirst = 33554432;
// GPU->CPU outputs in pinned memory (pinned_host_outputs).
inline constexpr int64_t kPinnedOutputs = 67108864;
inline constexpr int64_t kComputedShapes = 134217728;  // outputs' shapes computed, not copied
// No device memory made ahead for the next copy.
inline constexpr int64_t kNoDeviceBlocksAhead = 268435456;
inline constexpr int64_t kLateSplit = 536870912;  // helpers queued only after the first element
// Outputs freed without asking for the next ones' lines.
inline constexpr int64_t kNoFreeAhead = 1073741824;
// 2147483648, past int32_t: output dicts made by idle workers, not the dict-making thread (the
// dict shelf off, dict_shelf.h).
inline constexpr int64_t kNoShelf = int64_t{1} << 31;
// 2^32: each result kept alive for kKeptResults more copies, freed outside the clock.
inline constexpr int64_t kKeepResults = int64_t{1} << 32;

// The cases' usual sums. Hot: the default options, copies back to back.
inline constexpr int64_t kHot = kPack + kPinnedStaging + kBackgroundThread;
// A training step without its gap: back-to-back fresh batches, each dropping the last one.
inline constexpr int64_t kGaplessStep = kHot + kFreshBatch + kFreePrevious;
// A training loop's step: a fresh batch after an idle gap, the last one dropped meanwhile.
inline constexpr int64_t kStep = kGaplessStep + kIdleGap;
// The same step after a busy gap. Both steps are also measured + kNoWakeAhead (911, 1935), and
// the four + kShortGap (2447, 2959, 3471, 3983).
inline constexpr int64_t kBusyStep = kStep + kBusyGap;
// The numbers the notes know them by.
static_assert(kHot == 7 && kGaplessStep == 391 && kStep == 399 && kBusyStep == 1423);
}  // namespace engine_bits

// How many more copies kKeepResults keeps each result for.
inline constexpr size_t kKeptResults = 16;

// CPU->GPU cases without a gap before each copy, each run until its copies took 0.3 s.
void engine_args(benchmark::internal::Benchmark* b);
// CPU->GPU and GPU->CPU cases with a gap before each copy, a fixed number of copies each.
void h2d_gap_args(benchmark::internal::Benchmark* b);
void d2h_gap_args(benchmark::internal::Benchmark* b);
// GPU->CPU cases without a gap.
void d2h_args(benchmark::internal::Benchmark* b);

}  // namespace mtc::microbench
