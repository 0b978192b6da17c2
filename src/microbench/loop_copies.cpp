#include "loop_copies.h"

#include <stdexcept>
#include <thread>
#include <utility>

#include "bench_support.h"
#include "detail/leaf_router.h"
#include "detail/structure.h"

namespace mtc::microbench {

using Clock = std::chrono::steady_clock;

LoopPattern loop_pattern_from_name(const std::string& name) {
  if (name == "hot") return LoopPattern::kHot;
  if (name == "step-sleep") return LoopPattern::kStepSleep;
  if (name == "step-busy") return LoopPattern::kStepBusy;
  throw std::invalid_argument("unknown loop pattern '" + name + "' (hot, step-sleep or step-busy)");
}

int inputs_for(LoopPattern pattern) { return pattern == LoopPattern::kHot ? 1 : kStepInputs; }

double walk_seconds(const c10::IValue& data, c10::Device target) {
  const mtc::CopyOptions options;
  mtc::CopyStats stats;
  mtc::detail::LeafRouter router(target, options, stats);
  c10::IValue result;
  const auto t0 = Clock::now();
  mtc::detail::StructureCopier<mtc::detail::LeafRouter>(router).copy(data, result);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

LoopCopies::LoopCopies(std::vector<c10::IValue> inputs, c10::Device target, LoopPattern pattern)
    : inputs_(std::move(inputs)), target_(target), pattern_(pattern) {
  if (inputs_.empty()) throw std::invalid_argument("LoopCopies: no input to copy");
}

LoopCopy LoopCopies::copy() {
  const bool step = pattern_ != LoopPattern::kHot;
  if (pattern_ == LoopPattern::kStepBusy) busy_gap(kStepGap);
  if (pattern_ == LoopPattern::kStepSleep) std::this_thread::sleep_for(kStepGap);
  const c10::IValue& data = inputs_[turn_++ % inputs_.size()];
  LoopCopy measured;
  c10::IValue out;  // a hot copy's result, dropped after the clock
  {
    const auto t0 = Clock::now();
    mtc::CopyHandle handle = mtc::start_copy(data, target_);
    const auto t1 = Clock::now();
    if (step) previous_ = c10::IValue();
    out = handle.get();
    measured.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    measured.start_seconds = std::chrono::duration<double>(t1 - t0).count();
    measured.stats = handle.stats();
  }
  if (step) previous_ = std::move(out);
  return measured;
}

}  // namespace mtc::microbench
