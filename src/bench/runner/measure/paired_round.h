// One round of an A/B pair measured sample by sample: a strategy and the same strategy copying
// with another build of the engine (`engine` and `engine@base`). Each step takes one sample of
// each, in an order drawn from the seed (PairOrder), so both see the same moments of the host:
// the CPU states, caches and neighbours that move within seconds on a shared machine. Their
// medians of the round then pair, and the ratio of the two is free of what the moment did.
#pragma once

#include "runner/measure/case_runner.h"
#include "runner/measure/case_settings.h"
#include "runner/measure/measure_group.h"
#include "runner/measure/progress.h"
#include "runner/measure/round_order.h"

namespace mtc::bench {

// Both cases sample until each may end its round and every member of `group` is done; the
// round's loop time is split evenly between them. A case that fails is marked failed and the
// other goes on alone. Never leaves the group waiting. When both complete the round, `a` (the
// candidate) records the median of the round's per-step log ratios against `b` (PairedSteps).
void measure_paired_round(CaseRunner& a, CaseRunner& b, const CaseSettings& settings,
                          MeasureGroup& group, int process, Progress* progress, PairOrder order);

}  // namespace mtc::bench
