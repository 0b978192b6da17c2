#include "runner/measure/case_runner.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <fmt/format.h>
#include <mtc/nvtx.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "runner/measure/clock.h"
#include "runner/measure/gap.h"
#include "runner/measure/interrupt.h"
#include "runner/strategies/engine.h"
#include "runner/verify/verify.h"

namespace mtc::bench {
namespace {

nlohmann::json engine_json(const Strategy& strategy) {
  const auto* engine = dynamic_cast<const EngineStrategy*>(&strategy);
  if (engine == nullptr) return nullptr;
  nlohmann::json j{{"options", copy_options_json(engine->options())}, {"stats", nullptr}};
  if (const auto s = engine->last_stats()) {
    j["stats"] = {{"tensors", s->tensors},
                  {"bytes", s->bytes},
                  {"reused", s->reused},
                  {"packed", s->packed},
                  {"chunks", s->chunks},
                  {"per_tensor", s->per_tensor},
                  {"pinned_bytes", s->pinned_bytes}};
  }
  // Which build copied: this program's engine, or one loaded with --engine-lib.
  j["revision"] = engine->revision();
  // The pool is shared by every case of the process that copies with the same build: these are
  // its figures when this case's entry is written, peaks since the process started.
  const mtc::PinnedPoolStats pool = engine->pinned_pool_stats();
  j["pinned_pool"] = {
      {"reserved_bytes", pool.reserved_bytes},
      {"peak_reserved_bytes", pool.peak_reserved_bytes},
      {"peak_in_use_bytes", pool.peak_in_use_bytes},
      {"slab_allocations", pool.slab_allocations},
      {"reserved_over_peak_in_use",
       pool.peak_in_use_bytes > 0 ? nlohmann::json(static_cast<double>(pool.reserved_bytes) /
                                                   static_cast<double>(pool.peak_in_use_bytes))
                                  : nlohmann::json(nullptr)}};
  return j;
}

double median_or_zero(const std::vector<double>& values) { return summarize(values).median; }

}  // namespace

CaseRunner::CaseRunner(std::unique_ptr<Strategy> strategy, Route route,
                       std::vector<c10::IValue> inputs, Pattern pattern, int device)
    : strategy_(std::move(strategy)),
      route_(route),
      inputs_(std::move(inputs)),
      pattern_(pattern),
      device_(device) {
  if (pattern_ == Pattern::kHot) inputs_.resize(std::min<size_t>(inputs_.size(), 1));
  if (route_.target.is_cuda()) {
    timer_device_ = route_.target.index();
  } else if (route_.source.is_cuda()) {
    timer_device_ = route_.source.index();
  }
}

void CaseRunner::fail(std::string reason) {
  if (status_ == EntryStatus::kOk) {
    status_ = EntryStatus::kFailed;
    reason_ = std::move(reason);
  }
}

void CaseRunner::prepare() {
  MTC_RANGE(setup, "setup");
  if (inputs_.empty()) throw std::logic_error("a case needs at least one input");
  strategy_->prepare(route_);
}

void CaseRunner::synchronize_devices() const {
  // Every strategy ends with the same full device synchronize, so none is credited for work
  // it left queued; the strategies' own waits (stream or event) come before it.
  auto synchronize = [](const c10::Device& d) {
    c10::cuda::CUDAGuard guard(d.index());
    c10::cuda::device_synchronize();
  };
  if (route_.source.is_cuda()) synchronize(route_.source);
  if (route_.target.is_cuda() && route_.target != route_.source) synchronize(route_.target);
}

const c10::IValue& CaseRunner::next_input() {
  const c10::IValue& input = inputs_[next_input_ % inputs_.size()];
  ++next_input_;
  return input;
}

c10::IValue CaseRunner::run_untimed(const c10::IValue& input) {
  strategy_->start(input);
  c10::IValue out = strategy_->finish();
  synchronize_devices();
  return out;
}

void CaseRunner::warmup(int64_t count) {
  MTC_RANGE(warmup, "warm-up");
  // Stops at Ctrl-C as the measuring does: a warm-up of a million copies of a large batch would
  // otherwise keep the run for hours after the user asked it to end.
  int64_t done = 0;
  for (; done < count && !interrupted(); ++done) run_untimed(next_input());
  warmup_done_ = done;
}

void CaseRunner::verify() {
  MTC_RANGE(verify, "verify");
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const c10::IValue output = run_untimed(inputs_[k]);
    if (const auto mismatch = verify_copy(inputs_[k], output, route_.target)) {
      verified_ = false;
      status_ = EntryStatus::kVerificationFailed;
      reason_ = inputs_.size() > 1 ? fmt::format("input {}: {}", k, mismatch->describe())
                                   : mismatch->describe();
      return;
    }
  }
  verified_ = true;
}

CaseRunner::Sample CaseRunner::take_sample(int64_t index, double overlap_s) {
  static const mtc::nvtx::registered_string sample_message{"sample"};
  const c10::IValue& input = next_input();
  const mtc::nvtx::scoped_range range{mtc::nvtx::attributes(sample_message, index)};
  if (timer_device_) gpu_start_.record(c10::cuda::getCurrentCUDAStream(*timer_device_));
  const double cpu_before = process_cpu_seconds();
  const auto t0 = SteadyClock::now();
  strategy_->start(input);
  const auto t1 = SteadyClock::now();
  const double spun = overlap_s > 0.0 ? spin_for(overlap_s, interrupted) : 0.0;
  // A training step drops its previous batch on the caller's thread once the next copy is under
  // way, before it waits for it (`handle = start(next); batch = {}; batch = handle.get()`): the
  // release overlaps what the copy does on other threads and on the device. For a strategy that
  // copies inside start(), such as per-tensor .to(), that is after the copy.
  if (is_step(pattern_)) previous_output_ = c10::IValue();
  c10::IValue output = strategy_->finish();
  synchronize_devices();
  // In the hot pattern the output dies after the clock stops, at the end of this scope.
  if (is_step(pattern_)) previous_output_ = std::move(output);
  const auto t2 = SteadyClock::now();
  const double cpu_after = process_cpu_seconds();

  Sample s{};
  s.wall = seconds_between(t0, t2);
  s.blocked = seconds_between(t0, t1);
  s.cpu = cpu_after - cpu_before;
  // What the copy costs the caller's timeline: everything but its own work.
  s.exposed = std::max(0.0, s.wall - spun);
  if (timer_device_) {
    gpu_stop_.record(c10::cuda::getCurrentCUDAStream(*timer_device_));
    gpu_stop_.synchronize();
    s.gpu = static_cast<double>(gpu_start_.elapsed_time(gpu_stop_)) * 1e-3;
  }
  if (const auto stats = strategy_->last_stats()) {
    queued_us_.push_back(stats->queued_us);
    traverse_us_.push_back(stats->traverse_us);
    submit_us_.push_back(stats->submit_us);
    outputs_us_.push_back(stats->outputs_us);
  }
  return s;
}

void CaseRunner::record(const Sample& s, double overlap_s) {
  rounds_.back().samples.push_back(s.wall);
  round_of_sample_.push_back(static_cast<int64_t>(rounds_.size()) - 1);
  wall_.push_back(s.wall);
  blocked_.push_back(s.blocked);
  cpu_.push_back(s.cpu);
  if (timer_device_) gpu_.push_back(s.gpu);
  if (overlap_s > 0.0) exposed_.push_back(s.exposed);
  sample_time_s_ += s.wall;
}

CaseProgress CaseRunner::progress() const {
  CaseProgress p;
  p.rounds = static_cast<int64_t>(rounds_.size());
  p.samples = static_cast<int64_t>(wall_.size());
  p.sample_time_s = sample_time_s_;
  p.loop_time_s = loop_time_s_;
  p.noise = summarize_rounds(rounds_).reported();
  return p;
}

void CaseRunner::begin_round(const CaseSettings& settings, int process) {
  round_start_ = progress();
  round_samples_ = 0;
  round_done_ = false;
  // An untimed copy first: whatever ran before left caches and workers in its state, not this
  // case's. The step pattern's first sample also needs a previous output to free.
  if (is_step(pattern_)) {
    Gap(gap_mode_of(pattern_), settings.gap_touch_bytes).pass(settings.gap_s);
    previous_output_ = run_untimed(next_input());
  } else {
    run_untimed(next_input());
  }
  rounds_.push_back(Round{{}, process});
}

bool CaseRunner::take_round_sample(const CaseSettings& settings,
                                   SteadyClock::time_point round_start, int sharers) {
  // The idle gap of a training step: the caller sleeps or works elsewhere, and nothing is copied.
  if (is_step(pattern_)) Gap(gap_mode_of(pattern_), settings.gap_touch_bytes).pass(settings.gap_s);
  record(take_sample(round_start_.samples + round_samples_, settings.overlap_s),
         settings.overlap_s);
  ++round_samples_;
  // Cases measured together share the round's loop time.
  round_loop_s_ = seconds_between(round_start, SteadyClock::now()) / sharers;
  if (!round_done_) {
    round_done_ = settings.fixed_samples > 0 ? round_samples_ >= settings.fixed_samples
                                             : round_complete(settings.stopping, round_samples_,
                                                              round_loop_s_, round_start_);
  }
  return round_done_;
}

// The bar: how far the case is towards its last possible round (the rounds done and this one's
// share of its loop time), so it moves in every round and is full at --max-rounds; the noise
// target may end the case before. The noise is unknown ("--") until a round has judged it.
void CaseRunner::report_progress(const CaseSettings& settings, Progress& progress) const {
  const double this_round =
      settings.fixed_samples > 0
          ? static_cast<double>(round_samples_) / static_cast<double>(settings.fixed_samples)
          : round_loop_s_ / std::max(settings.stopping.round_time_s, 1e-9);
  const double rounds =
      settings.fixed_samples > 0
          ? 1.0
          : static_cast<double>(std::max<int64_t>(settings.stopping.max_rounds, 1));
  const double fraction =
      (static_cast<double>(round_start_.rounds) + std::min(1.0, this_round)) / rounds;
  progress.update(round_start_.samples + round_samples_,
                  round_start_.rounds > 0 && round_start_.noise < 1.0 ? round_start_.noise : -1.0,
                  std::min(1.0, fraction));
}

void CaseRunner::end_round() {
  // Outside the clock: a case must not hold its last output while the others measure.
  previous_output_ = c10::IValue();
  loop_time_s_ += round_loop_s_;
  round_loop_s_ = 0.0;
}

void CaseRunner::record_paired_round(std::string baseline, std::optional<double> median_log_ratio) {
  if (!paired_) paired_ = PairedSteps{std::move(baseline), {}};
  paired_->median_log_ratio.push_back(median_log_ratio);
}

std::string_view CaseRunner::strategy_name() const { return strategy_->name(); }

void CaseRunner::measure_round(const CaseSettings& settings, MeasureGroup& group, int process,
                               Progress* progress) {
  MTC_RANGE(measure, "measure");
  bool done = false;
  group.arrive_and_wait();
  const auto loop_start = SteadyClock::now();
  try {
    begin_round(settings, process);
    for (;;) {
      const bool complete = take_round_sample(settings, loop_start, 1);
      if (!done) {
        done = complete;
        if (done) group.mark_done();
        if (progress != nullptr) report_progress(settings, *progress);
      }
      if ((done && group.all_done()) || interrupted()) break;
    }
  } catch (const std::exception& e) {
    if (!done) group.mark_done();
    fail(e.what());
  }
  round_loop_s_ = seconds_between(loop_start, SteadyClock::now());
  end_round();
}

Entry CaseRunner::entry(const CaseSettings& settings, const WorkloadSize& size) const {
  Entry e;
  e.device = device_;
  e.direction = std::string(to_string(route_.direction));
  e.strategy = std::string(strategy_->name());
  e.pattern = std::string(to_string(pattern_));
  e.source = route_.source.str();
  e.target = route_.target.str();
  e.status = status_;
  e.reason = reason_;
  e.verified = verified_;
  e.stop_reason = std::string(to_string(stop_reason_));
  e.warmup = warmup_done_;
  e.measure_time_s = loop_time_s_;
  e.rounds = summarize_rounds(rounds_, settings.interval_level);
  e.wall = summarize(wall_);
  e.wall.noise = e.rounds.reported();
  e.caller_blocked = summarize(blocked_);
  e.cpu = summarize(cpu_);
  if (timer_device_) e.gpu = summarize(gpu_);
  if (settings.overlap_s > 0.0) e.exposed = summarize(exposed_);
  if (e.wall.median > 0.0) {
    e.gb_per_s = static_cast<double>(size.bytes) / e.wall.median / 1e9;
    e.tensors_per_s = static_cast<double>(size.tensors) / e.wall.median;
  }
  // Only when every round has its figure: a round measured alone (its partner failed) has none.
  if (paired_ && paired_->median_log_ratio.size() == rounds_.size()) e.paired_steps = paired_;
  e.engine = engine_json(*strategy_);
  if (e.engine.is_object() && !queued_us_.empty()) {
    // Medians over the samples of where the engine says its time went.
    e.engine["steps_median_us"] = {{"queued", median_or_zero(queued_us_)},
                                   {"traverse", median_or_zero(traverse_us_)},
                                   {"submit", median_or_zero(submit_us_)},
                                   {"outputs", median_or_zero(outputs_us_)}};
  }
  if (settings.raw_samples && !wall_.empty()) {
    e.raw_samples = {{"round", round_of_sample_},
                     {"wall_s", wall_},
                     {"caller_blocked_s", blocked_},
                     {"gpu_s", timer_device_ ? nlohmann::json(gpu_) : nlohmann::json(nullptr)},
                     {"cpu_s", cpu_},
                     {"exposed_s", settings.overlap_s > 0.0 ? nlohmann::json(exposed_)
                                                            : nlohmann::json(nullptr)}};
  }
  return e;
}

}  // namespace mtc::bench
