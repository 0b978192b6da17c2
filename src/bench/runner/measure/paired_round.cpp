#include "runner/measure/paired_round.h"

#include <mtc/nvtx.h>

#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "runner/measure/clock.h"
#include "runner/measure/interrupt.h"
#include "stats/summary.h"

namespace mtc::bench {

void measure_paired_round(CaseRunner& a, CaseRunner& b, const CaseSettings& settings,
                          MeasureGroup& group, int process, Progress* progress, PairOrder order) {
  MTC_RANGE(measure, "measure");
  const std::array<CaseRunner*, 2> cases{&a, &b};
  std::array<bool, 2> done{false, false};  // its round may end, or it failed
  // Runs one phase of case k; an error fails that case only.
  const auto guarded = [&](size_t k, auto&& phase) {
    if (!cases[k]->ok()) {
      done[k] = true;
      return;
    }
    try {
      phase(*cases[k]);
    } catch (const std::exception& e) {
      cases[k]->fail(e.what());
      done[k] = true;
    }
  };
  const auto in_order = [&](auto&& phase) {
    const bool a_first = order.a_first();
    guarded(a_first ? 0 : 1, phase);
    guarded(a_first ? 1 : 0, phase);
  };

  bool marked = false;
  // ln(a / b) of every step in which both took a sample: the two were taken back to back.
  std::vector<double> step_log_ratios;
  group.arrive_and_wait();
  const auto round_start = SteadyClock::now();
  in_order([&](CaseRunner& c) { c.begin_round(settings, process); });
  while (a.ok() || b.ok()) {
    const int64_t a_before = a.samples_taken();
    const int64_t b_before = b.samples_taken();
    in_order([&](CaseRunner& c) {
      if (c.take_round_sample(settings, round_start, 2)) done[&c == &a ? 0 : 1] = true;
    });
    if (a.samples_taken() > a_before && b.samples_taken() > b_before && a.latest_wall() > 0.0 &&
        b.latest_wall() > 0.0) {
      step_log_ratios.push_back(std::log(a.latest_wall() / b.latest_wall()));
    }
    if (!marked && done[0] && done[1]) {
      group.mark_done();
      marked = true;
    }
    if (progress != nullptr) (a.ok() ? a : b).report_progress(settings, *progress);
    if ((marked && group.all_done()) || interrupted()) break;
  }
  if (!marked) group.mark_done();
  for (CaseRunner* c : cases) c->end_round();
  if (a.ok() && b.ok()) {
    a.record_paired_round(
        std::string(b.strategy_name()),
        step_log_ratios.empty() ? std::nullopt : std::optional<double>(median(step_log_ratios)));
  }
}

}  // namespace mtc::bench
