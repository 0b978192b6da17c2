#include "runner/measure/case_runner.h"

#include "runner/measure/clock.h"
#include "runner/strategies/engine.h"
#include "runner/verify/verify.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <mtc/nvtx.h>

#include <algorithm>

namespace mtc::bench {
namespace {

nlohmann::json engine_json(const Strategy& strategy) {
  const auto* engine = dynamic_cast<const EngineStrategy*>(&strategy);
  if (engine == nullptr) return nullptr;
  nlohmann::json j{{"options", copy_options_json(engine->options())}, {"stats", nullptr}};
  if (const auto s = engine->last_stats()) {
    j["stats"] = {{"tensors", s->tensors}, {"bytes", s->bytes},   {"reused", s->reused},
                  {"packed", s->packed},   {"chunks", s->chunks}, {"per_tensor", s->per_tensor},
                  {"pinned_bytes", s->pinned_bytes}};
  }
  return j;
}

double median_or_zero(const std::vector<double>& values) { return summarize(values).median; }

}  // namespace

CaseRunner::CaseRunner(std::unique_ptr<Strategy> strategy, Route route, c10::IValue input, int device)
    : strategy_(std::move(strategy)), route_(route), input_(std::move(input)), device_(device) {
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

c10::IValue CaseRunner::run_untimed() {
  strategy_->start(input_);
  c10::IValue out = strategy_->finish();
  synchronize_devices();
  return out;
}

void CaseRunner::warmup(int64_t count) {
  MTC_RANGE(warmup, "warm-up");
  for (int64_t i = 0; i < count; ++i) run_untimed();
  warmup_done_ = count;
}

void CaseRunner::verify() {
  MTC_RANGE(verify, "verify");
  const c10::IValue output = run_untimed();
  if (const auto mismatch = verify_copy(input_, output, route_.target)) {
    verified_ = false;
    status_ = EntryStatus::kVerificationFailed;
    reason_ = mismatch->describe();
  } else {
    verified_ = true;
  }
}

CaseRunner::Sample CaseRunner::take_sample(int64_t index, double overlap_s) {
  static const mtc::nvtx::registered_string sample_message{"sample"};
  const mtc::nvtx::scoped_range range{mtc::nvtx::attributes(sample_message, index)};
  if (timer_device_) gpu_start_.record(c10::cuda::getCurrentCUDAStream(*timer_device_));
  const double cpu_before = process_cpu_seconds();
  const auto t0 = SteadyClock::now();
  strategy_->start(input_);
  const auto t1 = SteadyClock::now();
  const double spun = overlap_s > 0.0 ? spin_for(overlap_s) : 0.0;
  c10::IValue output = strategy_->finish();
  synchronize_devices();
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

void CaseRunner::measure(const CaseSettings& settings, MeasureGroup& group, Progress* progress) {
  MTC_RANGE(measure, "measure");
  StoppingRule rule(settings.stopping);
  bool done = false;
  group.arrive_and_wait();
  const auto loop_start = SteadyClock::now();
  try {
    for (int64_t i = 0;; ++i) {
      const Sample s = take_sample(i, settings.overlap_s);
      wall_.push_back(s.wall);
      blocked_.push_back(s.blocked);
      cpu_.push_back(s.cpu);
      if (timer_device_) gpu_.push_back(s.gpu);
      if (settings.overlap_s > 0.0) exposed_.push_back(s.exposed);
      rule.add(s.wall);
      const double elapsed = seconds_between(loop_start, SteadyClock::now());
      if (!done) {
        const StopReason reason =
            settings.fixed_samples > 0
                ? (i + 1 >= settings.fixed_samples ? StopReason::kFixedCount : StopReason::kNone)
                : rule.check(elapsed);
        if (reason != StopReason::kNone) {
          done = true;
          stop_reason_ = reason;
          group.mark_done();
        }
        if (progress != nullptr) {
          progress->update(rule.samples(), rule.evaluated() ? rule.noise() : -1.0,
                           elapsed / settings.stopping.timeout_s);
        }
      }
      if (done && group.all_done()) break;
    }
  } catch (const std::exception& e) {
    if (!done) group.mark_done();
    fail(e.what());
  }
  measure_time_s_ = seconds_between(loop_start, SteadyClock::now());
}

Entry CaseRunner::entry(const CaseSettings& settings, const WorkloadSize& size) const {
  Entry e;
  e.device = device_;
  e.direction = std::string(to_string(route_.direction));
  e.strategy = std::string(strategy_->name());
  e.source = route_.source.str();
  e.target = route_.target.str();
  e.status = status_;
  e.reason = reason_;
  e.verified = verified_;
  e.stop_reason = std::string(to_string(stop_reason_));
  e.warmup = warmup_done_;
  e.measure_time_s = measure_time_s_;
  e.wall = summarize(wall_);
  e.caller_blocked = summarize(blocked_);
  e.cpu = summarize(cpu_);
  if (timer_device_) e.gpu = summarize(gpu_);
  if (settings.overlap_s > 0.0) e.exposed = summarize(exposed_);
  if (e.wall.median > 0.0) {
    e.gb_per_s = static_cast<double>(size.bytes) / e.wall.median / 1e9;
    e.tensors_per_s = static_cast<double>(size.tensors) / e.wall.median;
  }
  e.engine = engine_json(*strategy_);
  if (e.engine.is_object() && !queued_us_.empty()) {
    // Medians over the samples of where the engine says its time went.
    e.engine["steps_median_us"] = {{"queued", median_or_zero(queued_us_)},
                                   {"traverse", median_or_zero(traverse_us_)},
                                   {"submit", median_or_zero(submit_us_)},
                                   {"outputs", median_or_zero(outputs_us_)}};
  }
  if (settings.raw_samples && !wall_.empty()) {
    e.raw_samples = {{"wall_s", wall_},
                     {"caller_blocked_s", blocked_},
                     {"gpu_s", timer_device_ ? nlohmann::json(gpu_) : nlohmann::json(nullptr)},
                     {"cpu_s", cpu_},
                     {"exposed_s", settings.overlap_s > 0.0 ? nlohmann::json(exposed_) : nlohmann::json(nullptr)}};
  }
  return e;
}

}  // namespace mtc::bench
