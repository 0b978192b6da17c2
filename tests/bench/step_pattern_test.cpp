// The step pattern, through a fake strategy that records what the runner does with it.
#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "measure_support.h"
#include "runner/measure/case_runner.h"

namespace mtc::bench {
namespace {

const c10::Device kCpu(c10::kCPU);
const Route kH2H{Direction::kH2H, kCpu, kCpu};
constexpr double kReleaseSeconds = 0.004;

// What the fake saw: which input each copy got, and on which thread its outputs were released.
struct Record {
  std::mutex mutex;
  std::vector<int64_t> inputs;  // the tag of each start() call's input
  std::vector<std::thread::id> release_threads;
  // In order: "start N", "finish N", "release N" for the copy of the input tagged N.
  std::vector<std::string> events;
  void note(const std::string& what, int64_t tag) {
    std::lock_guard lock(mutex);
    events.push_back(what + " " + std::to_string(tag));
  }
};

// Copies its input (a one-element int64 tag) into an output whose release takes
// kReleaseSeconds: its buffer's deleter sleeps, then records the releasing thread.
class RecordingStrategy final : public Strategy {
 public:
  explicit RecordingStrategy(Record* record) : record_(record) {}
  std::string_view name() const override { return "recording"; }
  void prepare(const Route&) override {}
  void start(const c10::IValue& input) override {
    const int64_t tag = input.toTensor().item<int64_t>();
    {
      std::lock_guard lock(record_->mutex);
      record_->inputs.push_back(tag);
    }
    record_->note("start", tag);
    tag_ = tag;
    auto* buffer = new int64_t[1]{tag};
    Record* record = record_;
    output_ = at::from_blob(
        buffer, {1},
        [record](void* data) {
          std::this_thread::sleep_for(std::chrono::duration<double>(kReleaseSeconds));
          {
            std::lock_guard lock(record->mutex);
            record->release_threads.push_back(std::this_thread::get_id());
          }
          record->note("release", *static_cast<int64_t*>(data));
          delete[] static_cast<int64_t*>(data);
        },
        at::TensorOptions().dtype(at::kLong));
  }
  c10::IValue finish() override {
    record_->note("finish", tag_);
    return c10::IValue(std::exchange(output_, at::Tensor()));
  }

 private:
  Record* record_;
  at::Tensor output_;
  int64_t tag_ = 0;
};

std::vector<c10::IValue> tagged_inputs(int count) {
  std::vector<c10::IValue> inputs;
  for (int k = 0; k < count; ++k) inputs.emplace_back(at::full({1}, 100 + k, at::kLong));
  return inputs;
}

CaseSettings step_settings(double gap_s) {
  CaseSettings s;
  s.gap_s = gap_s;
  s.stopping.round_min_samples = 6;
  s.stopping.round_time_s = 0.0;
  return s;
}

using testing_support::measure_rounds;

TEST(StepPattern, UsesTheInputsInRotation) {
  Record record;
  CaseRunner runner(std::make_unique<RecordingStrategy>(&record), kH2H, tagged_inputs(3),
                    Pattern::kStep, -1);
  runner.prepare();
  runner.verify();  // every input once
  ASSERT_TRUE(runner.ok());
  measure_rounds(runner, step_settings(0.0), 1);
  // verify: 100, 101, 102; then the round's untimed sample and six timed ones, continuing the
  // rotation.
  EXPECT_EQ(record.inputs,
            (std::vector<int64_t>{100, 101, 102, 100, 101, 102, 100, 101, 102, 100}));
}

TEST(StepPattern, TheHotPatternCopiesTheFirstInputOnly) {
  Record record;
  CaseRunner runner(std::make_unique<RecordingStrategy>(&record), kH2H, tagged_inputs(3),
                    Pattern::kHot, -1);
  runner.prepare();
  runner.verify();
  measure_rounds(runner, step_settings(0.0), 1);
  for (int64_t tag : record.inputs) EXPECT_EQ(tag, 100);
}

TEST(StepPattern, TheGapPassesOutsideTheClock) {
  Record record;
  constexpr double kGap = 0.02;
  CaseRunner runner(std::make_unique<RecordingStrategy>(&record), kH2H, tagged_inputs(2),
                    Pattern::kStep, -1);
  runner.prepare();
  const CaseSettings settings = step_settings(kGap);
  measure_rounds(runner, settings, 1);
  const Entry e = runner.entry(settings, WorkloadSize{});
  // Seven gaps passed in the loop (the untimed sample's and six timed ones) ...
  EXPECT_GE(e.measure_time_s, 7 * kGap);
  // ... and none inside a sample: a sample is the copy plus one release, far below the gap.
  EXPECT_LT(e.wall.median, kGap / 2);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Both gaps pass outside the clock; in step-busy the caller works through them on its CPU, in
// step it sleeps.
TEST(StepPattern, TheBusyGapKeepsTheCallerOnTheCpuTheSleepingOneDoesNot) {
  constexpr double kGap = 0.02;
  double cpu[2] = {};
  for (const Pattern pattern : {Pattern::kStep, Pattern::kStepBusy}) {
    Record record;
    CaseRunner runner(std::make_unique<RecordingStrategy>(&record), kH2H, tagged_inputs(2), pattern,
                      -1);
    runner.prepare();
    CaseSettings settings = step_settings(kGap);
    settings.gap_touch_bytes = 1 << 20;
    const double before = thread_cpu_seconds();
    measure_rounds(runner, settings, 1);
    cpu[pattern == Pattern::kStepBusy ? 1 : 0] = thread_cpu_seconds() - before;
    const Entry e = runner.entry(settings, WorkloadSize{});
    EXPECT_GE(e.measure_time_s, 7 * kGap) << to_string(pattern);
    EXPECT_LT(e.wall.median, kGap / 2) << to_string(pattern) << ": a gap inside the clock";
  }
  // Seven gaps of 20 ms: busy spends most of them on the CPU (a third is ample on a shared
  // machine), sleeping next to none.
  EXPECT_GT(cpu[1], 7 * kGap / 3);
  EXPECT_LT(cpu[0], kGap);
}

TEST(StepPattern, ThePreviousOutputIsReleasedInsideTheSampleOnTheCallersThread) {
  Record record;
  CaseRunner runner(std::make_unique<RecordingStrategy>(&record), kH2H, tagged_inputs(2),
                    Pattern::kStep, -1);
  runner.prepare();
  const CaseSettings settings = step_settings(0.0);
  measure_rounds(runner, settings, 2);
  const Entry e = runner.entry(settings, WorkloadSize{});
  EXPECT_GE(e.wall.min, kReleaseSeconds);  // every timed sample paid for one release
  ASSERT_FALSE(record.release_threads.empty());
  for (const auto& id : record.release_threads) EXPECT_EQ(id, std::this_thread::get_id());
  // All outputs are gone after the rounds: none is held while other cases measure.
  EXPECT_EQ(record.release_threads.size(), record.inputs.size());
}

// As a training step whose copy runs elsewhere would: `handle = start(next); batch = {};
// batch = handle.get()`, so that the release overlaps the copy.
TEST(StepPattern, ThePreviousOutputDiesAfterTheNextCopyStartsAndBeforeItIsWaitedFor) {
  Record record;
  CaseRunner runner(std::make_unique<RecordingStrategy>(&record), kH2H, tagged_inputs(2),
                    Pattern::kStep, -1);
  runner.prepare();
  measure_rounds(runner, step_settings(0.0), 1);
  // The round's untimed copy (100), then six timed ones: each releases the one before it.
  std::vector<std::string> expected{"start 100", "finish 100"};
  for (int k = 1; k <= 6; ++k) {
    const int64_t tag = 100 + k % 2;
    const int64_t previous = 100 + (k - 1) % 2;
    expected.push_back("start " + std::to_string(tag));
    expected.push_back("release " + std::to_string(previous));
    expected.push_back("finish " + std::to_string(tag));
  }
  expected.push_back("release 100");  // the last output, after the round
  EXPECT_EQ(record.events, expected);
}

TEST(StepPattern, TheHotPatternReleasesAfterTheClock) {
  Record record;
  CaseRunner runner(std::make_unique<RecordingStrategy>(&record), kH2H, tagged_inputs(1),
                    Pattern::kHot, -1);
  runner.prepare();
  const CaseSettings settings = step_settings(0.0);
  measure_rounds(runner, settings, 1);
  EXPECT_LT(runner.entry(settings, WorkloadSize{}).wall.median, kReleaseSeconds);
}

}  // namespace
}  // namespace mtc::bench
