// One GPU's copies as a training loop makes them, for the several-GPU measurements (one process,
// a thread per GPU, and one process per GPU): the hot pattern, or training steps (mtc-bench's
// defaults: a 2 ms gap, eight batches in turn). The targets of several GPUs are stated for both.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "mtc/copier.h"

namespace mtc::microbench {

// A step frees the previous result right after start_copy, while the engine's workers walk the
// new batch, as BM_EngineCopy's kFreePrevious does; mtc-bench's step pattern frees it inside the
// sample too, but after the copy has finished.
enum class LoopPattern {
  kHot,        // the same batch back to back; the result dropped after the clock
  kStepSleep,  // a step: a 2 ms sleeping gap before each copy, the batch of the step (a
               // rotation of kStepInputs) and the previous step's result freed by the caller
               // right after start_copy, inside the copy's time
  kStepBusy    // the same with a busy gap: the caller works over 32 MiB (busy_gap)
};

// mtc-bench's step pattern by default: --gap-us 2000, --inputs 8.
inline constexpr std::chrono::microseconds kStepGap{2000};
inline constexpr int kStepInputs = 8;

// "hot", "step-sleep" or "step-busy"; throws std::invalid_argument naming anything else.
LoopPattern loop_pattern_from_name(const std::string& name);
// How many batches the pattern copies in turn: 1 hot, kStepInputs for steps.
int inputs_for(LoopPattern pattern);

// What one copy of the loop measured.
struct LoopCopy {
  double seconds = 0;        // start_copy until get() returned (the gap is not timed)
  double start_seconds = 0;  // start_copy alone: how long it kept the caller
  mtc::CopyStats stats;      // the engine's own steps
};

// The walk of a copy of `data` to `target` alone, on this thread: new containers, the packing plan
// and the output views, no CUDA call (so a CUDA target needs no GPU). Returns its seconds; the
// result is dropped after the clock, by this thread.
double walk_seconds(const c10::IValue& data, c10::Device target);

class LoopCopies {
 public:
  // `inputs`, copied in turn to `target` (each on the same device; the caller makes them).
  LoopCopies(std::vector<c10::IValue> inputs, c10::Device target, LoopPattern pattern);
  // Holds a previous result and batches: copies nothing (a mistaken copy would double them).
  LoopCopies(const LoopCopies&) = delete;
  LoopCopies& operator=(const LoopCopies&) = delete;
  LoopCopies(LoopCopies&&) = default;
  LoopCopies& operator=(LoopCopies&&) = default;

  // The next copy of the loop, its gap first.
  LoopCopy copy();

 private:
  std::vector<c10::IValue> inputs_;
  c10::Device target_;
  LoopPattern pattern_;
  size_t turn_ = 0;
  c10::IValue previous_;  // a step's result, freed inside the next step's copy
};

}  // namespace mtc::microbench
