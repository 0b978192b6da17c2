// One case: one strategy copying one prepared input along one route, on the calling thread.
// Its phases (prepare, warm-up, verify, measure) are separate calls so the runner can put
// cudaProfilerStart/Stop around just the measuring in --profile mode.
#pragma once

#include "runner/measure/case_settings.h"
#include "runner/measure/measure_group.h"
#include "runner/measure/progress.h"
#include "runner/measure/stopping.h"
#include "runner/report/report.h"
#include "runner/strategies/strategy.h"

#include <ATen/cuda/CUDAEvent.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mtc::bench {

class CaseRunner {
 public:
  // device: the GPU this case's thread drives (-1 without one), for the report.
  CaseRunner(std::unique_ptr<Strategy> strategy, Route route, c10::IValue input, int device);

  void prepare();
  void warmup(int64_t count);
  // Runs once more and checks the output; a mismatch marks the case verification_failed.
  void verify();
  // Samples until this case's rule and every other member of `group` are done. Never leaves
  // the group waiting: on failure it still marks itself done.
  void measure(const CaseSettings& settings, MeasureGroup& group, Progress* progress);

  // Marks the case failed (a runtime or CUDA error in one of its phases).
  void fail(std::string reason);
  bool ok() const { return status_ == EntryStatus::kOk; }

  Entry entry(const CaseSettings& settings, const WorkloadSize& size) const;

 private:
  // The timed unit: start, optional caller work, finish, device synchronize.
  struct Sample {
    double wall;
    double blocked;
    double gpu;  // 0 without a GPU timer
    double cpu;
    double exposed;
  };
  Sample take_sample(int64_t index, double overlap_s);
  c10::IValue run_untimed();
  void synchronize_devices() const;

  std::unique_ptr<Strategy> strategy_;
  Route route_;
  c10::IValue input_;
  int device_;
  // CUDA events on the current stream of the GPU side of the route; absent for h2h.
  std::optional<c10::DeviceIndex> timer_device_;
  at::cuda::CUDAEvent gpu_start_{cudaEventDefault};
  at::cuda::CUDAEvent gpu_stop_{cudaEventDefault};

  EntryStatus status_ = EntryStatus::kOk;
  std::string reason_;
  std::optional<bool> verified_;
  int64_t warmup_done_ = 0;
  StopReason stop_reason_ = StopReason::kNone;
  double measure_time_s_ = 0.0;
  std::vector<double> wall_, blocked_, gpu_, cpu_, exposed_;
  // The engine's own per-step timings of each sample (CopyStats), for its rows only.
  std::vector<double> queued_us_, traverse_us_, submit_us_, outputs_us_;
};

}  // namespace mtc::bench
