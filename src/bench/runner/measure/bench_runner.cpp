#include "runner/measure/bench_runner.h"

#include "runner/measure/device_threads.h"
#include "runner/strategies/catalog.h"
#include "runner/strategies/engine.h"
#include "runner/strategies/registry.h"
#include "runner/strategies/structure.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_profiler_api.h>
#include <fmt/format.h>
#include <mtc/nvtx.h>

#include <algorithm>
#include <memory>

namespace mtc::bench {
namespace {

// One (direction, strategy) over every GPU thread.
struct CaseGroup {
  std::string label;
  DeviceThreads* threads = nullptr;  // where its members run
  std::vector<std::unique_ptr<CaseRunner>> members;  // one per GPU thread; null when skipped
  std::vector<Entry> skipped;                        // entries of members that cannot run
};

Entry skipped_entry(Direction direction, const std::string& strategy, int device, std::string reason) {
  Entry e;
  e.device = device;
  e.direction = std::string(to_string(direction));
  e.strategy = strategy;
  e.status = EntryStatus::kSkipped;
  e.reason = std::move(reason);
  return e;
}

// Runs `phase` on a member's thread, turning an escaping error into a failed case.
template <typename Phase>
void guarded(CaseRunner& member, Phase&& phase) {
  if (!member.ok()) return;
  try {
    phase();
  } catch (const std::exception& e) {
    member.fail(e.what());
  }
}

void prepare_phases(CaseGroup& group, DeviceThreads& threads, const CaseSettings& settings) {
  threads.run([&](size_t i) {
    CaseRunner* member = group.members[i].get();
    if (member == nullptr) return;
    const nvtx3::scoped_range_in<mtc::nvtx::domain> range{nvtx3::message{group.label.c_str()}};
    guarded(*member, [&] { member->prepare(); });
    guarded(*member, [&] { member->warmup(settings.warmup); });
    guarded(*member, [&] { member->verify(); });
  });
}

void measure_phase(CaseGroup& group, DeviceThreads& threads, const CaseSettings& settings,
                   Progress& progress) {
  MeasureGroup sync(static_cast<int>(group.members.size()));
  progress.begin_case(group.label);
  threads.run([&](size_t i) {
    CaseRunner* member = group.members[i].get();
    if (member == nullptr || !member->ok()) {
      sync.withdraw();
      return;
    }
    const nvtx3::scoped_range_in<mtc::nvtx::domain> range{nvtx3::message{group.label.c_str()}};
    member->measure(settings, sync, i == 0 ? &progress : nullptr);
  });
  progress.end_case();
}

void collect(CaseGroup& group, const CaseSettings& settings, const WorkloadSize& size,
             std::vector<Entry>& entries) {
  for (Entry& e : group.skipped) entries.push_back(std::move(e));
  for (const auto& member : group.members) {
    if (member) entries.push_back(member->entry(settings, size));
  }
}

}  // namespace

std::optional<Route> route_for(Direction direction, int device, int cuda_device_count, std::string& why) {
  const c10::Device cpu(c10::kCPU);
  const auto gpu = [](int index) { return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)); };
  switch (direction) {
    case Direction::kH2H: return Route{direction, cpu, cpu};
    case Direction::kH2D:
    case Direction::kD2H:
      if (device < 0 || cuda_device_count == 0) {
        why = "needs a CUDA device";
        return std::nullopt;
      }
      return direction == Direction::kH2D ? Route{direction, cpu, gpu(device)}
                                          : Route{direction, gpu(device), cpu};
    case Direction::kD2D:
      if (device < 0 || cuda_device_count < 2) {
        why = "needs two GPUs: with one, every leaf is already on the target and the engine returns it as it is";
        return std::nullopt;
      }
      return Route{direction, gpu(device), gpu((device + 1) % cuda_device_count)};
  }
  why = "unknown direction";
  return std::nullopt;
}

c10::IValue input_for(const c10::IValue& workload, Direction direction, int device) {
  if (direction == Direction::kH2D || direction == Direction::kH2H) return workload;
  const c10::Device gpu(c10::kCUDA, static_cast<c10::DeviceIndex>(device));
  c10::IValue moved = map_tensors(workload, [&](const at::Tensor& t) { return t.to(at::TensorOptions().device(gpu)); });
  c10::cuda::CUDAGuard guard(gpu.index());
  c10::cuda::device_synchronize();
  return moved;
}

RunOutcome run_benchmarks(const c10::IValue& workload, const RunPlan& plan, Progress& progress) {
  RunOutcome outcome;
  const LeafCount count = count_tensors(workload);
  const WorkloadSize size{count.tensors, count.bytes};
  const bool cuda = plan.cuda_device_count > 0;
  // h2h does not involve a GPU: one thread is enough whatever --devices says.
  const std::vector<int> gpu_threads = cuda && !plan.devices.empty() ? plan.devices : std::vector<int>{-1};
  DeviceThreads cpu_pool(std::vector<int>{-1});
  DeviceThreads gpu_pool(gpu_threads);

  const mtc::CopyOptions engine_base = engine_options(plan.engine);
  const size_t total_cases = plan.directions.size() * plan.strategies.size();
  size_t case_number = 0;
  // With --profile every group is measured only after all are prepared; kept in table order.
  std::vector<std::unique_ptr<CaseGroup>> deferred;

  for (const Direction direction : plan.directions) {
    const bool host_only = direction == Direction::kH2H;
    const std::vector<int> devices = host_only ? std::vector<int>{-1} : gpu_threads;
    DeviceThreads& threads = host_only ? cpu_pool : gpu_pool;

    std::vector<std::optional<Route>> routes;
    std::vector<std::string> why(devices.size());
    for (size_t i = 0; i < devices.size(); ++i) {
      routes.push_back(route_for(direction, devices[i], plan.cuda_device_count, why[i]));
    }
    if (!routes.front()) {
      outcome.notes.push_back(fmt::format("{} skipped: {}", to_string(direction), why.front()));
      case_number += plan.strategies.size();
      continue;
    }

    std::vector<c10::IValue> inputs(devices.size());
    {
      MTC_RANGE(setup, "setup");
      threads.run([&](size_t i) { inputs[i] = input_for(workload, direction, devices[i]); });
    }

    for (const std::string& name : plan.strategies) {
      ++case_number;
      auto group = std::make_unique<CaseGroup>();
      group->label = fmt::format("[{}/{}] {} {}", case_number, total_cases, to_string(direction), name);
      group->threads = &threads;
      const StrategyInfo& info = *find_strategy(name);
      const std::string static_reason = unsupported_reason(info, direction, cuda);
      for (size_t i = 0; i < devices.size(); ++i) {
        auto strategy = make_strategy(name, engine_base);
        std::string reason = static_reason.empty() ? strategy->unsupported_reason(*routes[i]) : static_reason;
        if (!reason.empty()) {
          group->skipped.push_back(skipped_entry(direction, name, devices[i], std::move(reason)));
          group->members.emplace_back(nullptr);
          continue;
        }
        group->members.push_back(std::make_unique<CaseRunner>(std::move(strategy), *routes[i], inputs[i], devices[i]));
      }
      const bool runnable = std::any_of(group->members.begin(), group->members.end(),
                                        [](const auto& m) { return m != nullptr; });
      if (runnable) prepare_phases(*group, threads, plan.settings);
      if (plan.profile) {
        deferred.push_back(std::move(group));
        continue;
      }
      if (runnable) measure_phase(*group, threads, plan.settings, progress);
      collect(*group, plan.settings, size, outcome.entries);
    }
  }

  if (plan.profile) {
    // Only the fixed-count samples go between Start and Stop, so
    // `nsys profile --capture-range=cudaProfilerApi` records them and nothing of the set-up.
    if (cuda) cudaProfilerStart();
    for (auto& group : deferred) {
      const bool runnable = std::any_of(group->members.begin(), group->members.end(),
                                        [](const auto& m) { return m != nullptr; });
      if (runnable) measure_phase(*group, *group->threads, plan.settings, progress);
    }
    if (cuda) cudaProfilerStop();
    for (auto& group : deferred) collect(*group, plan.settings, size, outcome.entries);
  }
  return outcome;
}

}  // namespace mtc::bench
