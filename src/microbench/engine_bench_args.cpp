// The cases of BM_EngineCopy (engine_bench.cpp), and what each option bit asks for.
#include "engine_bench_args.h"

#include <initializer_list>

namespace mtc::microbench {

// Arguments: {batch multiplier, option bits: 1 pack, 2 pinned staging, 4 background thread, 8 idle
// gap before each copy, 16 walk never split, 32 one walking thread per 256 leaves, 64 workers spin
// 2 ms, 128 a fresh batch each copy (rotation of 8), 256 previous result freed inside the copy, 512
// workers never wake ahead of a copy, 1024 the gap busy, 2048 the gap 200 us instead of 5 ms, 4096
// no version_pool, 8192 workers spin 10 ms, 16384 one walking thread per 64 leaves, 32768 the
// caller spins through the gap, 65536 with 256: freed after get() instead, 131072 output dicts
// share the input's keys, 262144 output dicts made ahead (in the notes of 2026-11-29 and before,
// cases without this bit had none; now they follow MTC_DICT_STASH, on by default), 524288 input
// containers' element types copied, not read in place (before 2026-12-07 09:40 UTC: output dicts'
// tables as torch plans them, the shelf restocked while copies run back to back, output dicts'
// keys of one generation, outputs' lines demoted to the shared cache, the dict stash's at-once
// refill: each measured without a gain and removed), 1048576 none made ahead, 2097152 a current
// stream from torch's pool, 4194304 no driver warm-up ahead of a copy, 8388608 no prefetching in
// the walk and the fill, 16777216 with 256: the previous result's tensors offered to the copy as
// its outputs (ReusableOutputs), 33554432 the warmed worker gets no first claim on the copy's job,
// 67108864 GPU->CPU outputs pinned (pinned_host_outputs), 134217728 outputs' shapes computed, not
// copied, 268435456 no device memory made ahead for the next copy, 536870912 helpers queued only
// after the first element, 1073741824 outputs freed without asking for the next ones' lines,
// 2147483648 (kNoShelf) output dicts made by idle workers, not the dict-making thread, 2^32
// (kKeepResults) each result freed 16 copies later}. 399 = 7 + 8 + 128 + 256 is a training loop's
// step: a fresh batch after an idle gap, the last one dropped meanwhile; 1423 the same step after a
// busy gap; 911 and 1935 those without waking ahead; 2447, 2959, 3471 and 3983 the four with the
// short gap. Cases without a gap run until their copies took 0.3 s.
void engine_args(benchmark::internal::Benchmark* b) {
  for (int repeat : {1, 8}) b->Args({repeat, 7})->Args({repeat, 4103});
  b->Args({1, 71});
  b->Args({1, 391});
  b->Args({1, 1073742215});  // 391 with outputs freed without asking for the next ones' lines
  b->Args({1, 16777607});    // 391 with the previous result's tensors offered as the outputs
  b->Args({1, 23})->Args({8, 23})->Args({1, 39});
  b->Args({1, 6})->Args({1, 5})->Args({1, 3});
  // Who builds the outputs in a training loop's step (gap 0 and the full step): the walk split
  // on the pool (391, 399), on one worker (+16), split by the caller (-4), all on the caller.
  b->Args({1, 19})->Args({1, 407})->Args({1, 387})->Args({1, 403});
  b->Args({1, 16391});      // hot with a walking thread per 64 leaves
  b->Args({1, 131079});     // hot with the input's keys in the output dicts
  b->Args({1, 262151});     // hot with output dicts made ahead
  b->Args({1, 1048583});    // hot without output dicts made ahead
  b->Args({1, 2097159});    // hot on a stream from torch's pool
  b->Args({1, 8388615});    // hot without prefetching
  b->Args({1, 536870919});  // hot with helpers queued only after the first element
  b->Args({1, 134217735});  // hot with outputs' shapes computed
  b->Args({1, 268435463});  // hot without device memory made ahead
  b->Args({1, kNoShelf + 7})
      ->Args({1, kNoShelf + 391});          // dicts made by idle workers, not the dict thread
  b->Args({1, 524295})->Args({1, 524679});  // 7 and 391 with the element types copied
  b->Args({1, kKeepResults + 7});           // hot, each result freed 16 copies later
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

void h2d_gap_args(benchmark::internal::Benchmark* b) {
  gap_args(b, {15, 527, 31, 135, 399, 911, 1423, 1935, 415, 395, 411, 2447, 2959, 3471, 3983, 4495,
               5519, 8591, 9615, 16783, 17807, 33167, 41359, 33163, 65935, 66959, 131471, 132495,
               262543, 263567, 1048975, 1049999, 2097551, 4194703, 4195727, 8389007, 8390031,
               // 399 and 1423 with the previous result's tensors offered as the outputs
               16777615, 16778639,
               // 399 and 1423 without the warmed worker's first claim on the job
               33554831, 33555855,
               // 399 and 1423 with helpers queued only after the first element
               536871311, 536872335,
               // 399 and 1423 with outputs' shapes computed
               134218127, 134219151,
               // 399 and 1423 without device memory made ahead
               268435855, 268436879,
               // 399 and 1423 with outputs freed without asking for the next ones' lines
               1073742223, 1073743247,
               // 399 and 1423 with output dicts made by idle workers, not the dict thread
               kNoShelf + 399, kNoShelf + 1423,
               // 399 and 1423 with the element types copied
               524687, 525711});
}
void d2h_gap_args(benchmark::internal::Benchmark* b) {
  gap_args(
      b, {135, 399, 911, 1423, 1935, 415, 411, 4495, 5519, 8591, 9615, 16783, 65935, 66959, 131471,
          262543, 263567, 1048975, 1049999, 2097551, 4194703, 4195727, 8389007, 8390031,
          // 399 and 1423 without the warmed worker's first claim on the job
          33554831, 33555855,
          // 399 and 1423 with helpers queued only after the first element
          536871311, 536872335,
          // 399 and 1423 with pinned outputs
          67109263, 67110287,
          // 399 and 1423 with outputs' shapes computed
          134218127, 134219151,
          // 399 and 1423 with outputs freed without asking for the next ones' lines
          1073742223, 1073743247,
          // 399 and 1423 with output dicts made by idle workers, not the dict thread
          kNoShelf + 399, kNoShelf + 1423,
          // 399 and 1423 with the element types copied
          524687, 525711});
}

void d2h_args(benchmark::internal::Benchmark* b) {
  b->Args({1, 7})
      ->Args({1, 262151})   // hot with output dicts made ahead
      ->Args({1, 1048583})  // hot without output dicts made ahead
      ->Args({1, 391})      // the previous result freed inside the copy, beside the walk
      ->Args({1, 4103})
      ->Args({8, 7})
      ->Args({8, 4103})
      ->Args({1, 19})
      ->Args({1, 2097159})    // on a stream from torch's pool
      ->Args({1, 8388615})    // without prefetching
      ->Args({1, 536870919})  // helpers queued only after the first element
      ->Args({1, 67108871})   // pinned outputs
      ->Args({1, 134217735})  // outputs' shapes computed
      ->Args({1, kNoShelf + 7})
      ->Args({1, kNoShelf + 391})    // dicts made by idle workers, not the dict thread
      ->Args({1, 524295})            // 7 with the element types copied
      ->Args({1, 524679})            // 391 with them copied
      ->Args({1, kKeepResults + 7})  // hot, each result freed 16 copies later
      ->UseManualTime()
      ->MinTime(0.3)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace mtc::microbench
