// The cases of BM_EngineCopy (engine_bench.cpp), each a sum of its option bits
// (engine_bench_args.h, with what each bit asks for).
#include "engine_bench_args.h"

#include <initializer_list>

namespace mtc::microbench {

// The bits by their names alone, so that each case reads as the sum it asks for.
using namespace engine_bits;

// Cases without a gap run until their copies took 0.3 s.
void engine_args(benchmark::internal::Benchmark* b) {
  for (int repeat : {1, 8}) b->Args({repeat, kHot})->Args({repeat, kHot + kNoVersionPool});
  b->Args({1, kHot + kSpin2ms});
  b->Args({1, kGaplessStep});
  b->Args({1, kGaplessStep + kNoFreeAhead});
  b->Args({1, kGaplessStep + kReuseOutputs});
  b->Args({1, kHot + kUnsplitWalk})
      ->Args({8, kHot + kUnsplitWalk})
      ->Args({1, kHot + kFewerWalkers});
  b->Args({1, kPinnedStaging + kBackgroundThread})
      ->Args({1, kPack + kBackgroundThread})
      ->Args({1, kPack + kPinnedStaging});
  // Who builds the outputs in a training loop's step (gap 0 and the full step): the walk split
  // on the pool (kGaplessStep, kStep), on one worker (+ kUnsplitWalk), split by the caller
  // (- kBackgroundThread), all on the caller.
  b->Args({1, kHot - kBackgroundThread + kUnsplitWalk})
      ->Args({1, kGaplessStep + kUnsplitWalk})
      ->Args({1, kGaplessStep - kBackgroundThread})
      ->Args({1, kGaplessStep - kBackgroundThread + kUnsplitWalk});
  b->Args({1, kHot + kMoreWalkers});
  b->Args({1, kHot + kInputKeys});
  b->Args({1, kHot + kDictsAhead});
  b->Args({1, kHot + kNoDictsAhead});
  b->Args({1, kHot + kPoolStream});
  b->Args({1, kHot + kNoPrefetch});
  b->Args({1, kHot + kLateSplit});
  b->Args({1, kHot + kComputedShapes});
  b->Args({1, kHot + kNoDeviceBlocksAhead});
  b->Args({1, kHot + kNoShelf})->Args({1, kGaplessStep + kNoShelf});
  b->Args({1, kHot + kCopiedTypes})->Args({1, kGaplessStep + kCopiedTypes});
  b->Args({1, kHot + kKeepResults});
  b->UseManualTime()->MinTime(0.3)->Unit(benchmark::kMicrosecond);
}

// Cases with a gap before each copy run a fixed number of copies: 0.3 s of copies of ~300 us
// would take 1,000 gaps, 5 s a repetition with the 5 ms gap.
namespace {
constexpr int64_t kCopiesAfterAGap = 100;
void gap_args(benchmark::internal::Benchmark* b, std::initializer_list<int64_t> flags) {
  for (const int64_t f : flags) b->Args({1, f});
  b->UseManualTime()->Iterations(kCopiesAfterAGap)->Unit(benchmark::kMicrosecond);
}
}  // namespace

// Most of the step's variants come in pairs: after an idle gap (kStep), then a busy one
// (kBusyStep).
void h2d_gap_args(benchmark::internal::Benchmark* b) {
  gap_args(
      b, {// Hot after an idle gap: as is, without waking ahead, the walk on one worker.
          kHot + kIdleGap, kHot + kIdleGap + kNoWakeAhead, kHot + kIdleGap + kUnsplitWalk,
          // Fresh batches without a gap.
          kHot + kFreshBatch,
          // The steps, with and without waking ahead.
          kStep, kStep + kNoWakeAhead, kBusyStep, kBusyStep + kNoWakeAhead,
          // The walk on one worker, split by the caller, on the caller alone.
          kStep + kUnsplitWalk, kStep - kBackgroundThread, kStep - kBackgroundThread + kUnsplitWalk,
          // The four steps with the short gap.
          kStep + kShortGap, kStep + kNoWakeAhead + kShortGap, kBusyStep + kShortGap,
          kBusyStep + kNoWakeAhead + kShortGap,
          // No version_pool; workers spinning 10 ms; more walkers.
          kStep + kNoVersionPool, kBusyStep + kNoVersionPool, kStep + kSpin10ms,
          kBusyStep + kSpin10ms, kStep + kMoreWalkers, kBusyStep + kMoreWalkers,
          // The caller spinning through the gap: alone, with workers spinning 10 ms, and
          // without the background thread.
          kStep + kSpinningCaller, kStep + kSpin10ms + kSpinningCaller,
          kStep - kBackgroundThread + kSpinningCaller,
          // The previous result freed after get(); the input's keys; dicts made ahead or not.
          kStep + kFreeAfterGet, kBusyStep + kFreeAfterGet, kStep + kInputKeys,
          kBusyStep + kInputKeys, kStep + kDictsAhead, kBusyStep + kDictsAhead,
          kStep + kNoDictsAhead, kBusyStep + kNoDictsAhead,
          // A stream from torch's pool; no driver warm-up; no prefetching.
          kStep + kPoolStream, kStep + kNoDriverWarmup, kBusyStep + kNoDriverWarmup,
          kStep + kNoPrefetch, kBusyStep + kNoPrefetch,
          // The previous result's tensors offered as the outputs.
          kStep + kReuseOutputs, kBusyStep + kReuseOutputs,
          // Without the warmed worker's first claim on the job.
          kStep + kNoWarmWorkerFirst, kBusyStep + kNoWarmWorkerFirst,
          // Helpers queued only after the first element.
          kStep + kLateSplit, kBusyStep + kLateSplit,
          // Outputs' shapes computed.
          kStep + kComputedShapes, kBusyStep + kComputedShapes,
          // Without device memory made ahead.
          kStep + kNoDeviceBlocksAhead, kBusyStep + kNoDeviceBlocksAhead,
          // Outputs freed without asking for the next ones' lines.
          kStep + kNoFreeAhead, kBusyStep + kNoFreeAhead,
          // Output dicts made by idle workers, not the dict thread.
          kStep + kNoShelf, kBusyStep + kNoShelf,
          // The element types copied.
          kStep + kCopiedTypes, kBusyStep + kCopiedTypes});
}
void d2h_gap_args(benchmark::internal::Benchmark* b) {
  gap_args(
      b, {// Fresh batches without a gap.
          kHot + kFreshBatch,
          // The steps, with and without waking ahead.
          kStep, kStep + kNoWakeAhead, kBusyStep, kBusyStep + kNoWakeAhead,
          // The walk on one worker, and on the caller alone.
          kStep + kUnsplitWalk, kStep - kBackgroundThread + kUnsplitWalk,
          // No version_pool; workers spinning 10 ms; more walkers.
          kStep + kNoVersionPool, kBusyStep + kNoVersionPool, kStep + kSpin10ms,
          kBusyStep + kSpin10ms, kStep + kMoreWalkers,
          // The previous result freed after get(); the input's keys; dicts made ahead or not.
          kStep + kFreeAfterGet, kBusyStep + kFreeAfterGet, kStep + kInputKeys, kStep + kDictsAhead,
          kBusyStep + kDictsAhead, kStep + kNoDictsAhead, kBusyStep + kNoDictsAhead,
          // A stream from torch's pool; no driver warm-up; no prefetching.
          kStep + kPoolStream, kStep + kNoDriverWarmup, kBusyStep + kNoDriverWarmup,
          kStep + kNoPrefetch, kBusyStep + kNoPrefetch,
          // Without the warmed worker's first claim on the job.
          kStep + kNoWarmWorkerFirst, kBusyStep + kNoWarmWorkerFirst,
          // Helpers queued only after the first element.
          kStep + kLateSplit, kBusyStep + kLateSplit,
          // Pinned outputs.
          kStep + kPinnedOutputs, kBusyStep + kPinnedOutputs,
          // Outputs' shapes computed.
          kStep + kComputedShapes, kBusyStep + kComputedShapes,
          // Outputs freed without asking for the next ones' lines.
          kStep + kNoFreeAhead, kBusyStep + kNoFreeAhead,
          // Output dicts made by idle workers, not the dict thread.
          kStep + kNoShelf, kBusyStep + kNoShelf,
          // The element types copied.
          kStep + kCopiedTypes, kBusyStep + kCopiedTypes});
}

void d2h_args(benchmark::internal::Benchmark* b) {
  b->Args({1, kHot})
      ->Args({1, kHot + kDictsAhead})
      ->Args({1, kHot + kNoDictsAhead})
      ->Args({1, kGaplessStep})  // the previous result freed inside the copy, beside the walk
      ->Args({1, kHot + kNoVersionPool})
      ->Args({8, kHot})
      ->Args({8, kHot + kNoVersionPool})
      ->Args({1, kHot - kBackgroundThread + kUnsplitWalk})
      ->Args({1, kHot + kPoolStream})
      ->Args({1, kHot + kNoPrefetch})
      ->Args({1, kHot + kLateSplit})
      ->Args({1, kHot + kPinnedOutputs})
      ->Args({1, kHot + kComputedShapes})
      ->Args({1, kHot + kNoShelf})
      ->Args({1, kGaplessStep + kNoShelf})
      ->Args({1, kHot + kCopiedTypes})
      ->Args({1, kGaplessStep + kCopiedTypes})
      ->Args({1, kHot + kKeepResults})
      ->UseManualTime()
      ->MinTime(0.3)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace mtc::microbench
