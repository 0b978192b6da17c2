#include "runner/measure/bench_runner.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_profiler_api.h>
#include <fmt/format.h>
#include <mtc/nvtx.h>

#include <algorithm>
#include <memory>

#include "compare/in_process.h"
#include "runner/measure/device_threads.h"
#include "runner/measure/interrupt.h"
#include "runner/measure/paired_round.h"
#include "runner/measure/round_confinement.h"
#include "runner/measure/round_order.h"
#include "runner/strategies/catalog.h"
#include "runner/strategies/engine.h"
#include "runner/strategies/registry.h"
#include "runner/strategies/structure.h"

namespace mtc::bench {
namespace {

// One (direction, pattern, strategy) over every GPU thread.
struct CaseGroup {
  std::string strategy;
  std::string label;
  std::vector<std::unique_ptr<CaseRunner>> members;  // one per GPU thread; null when skipped
  std::vector<Entry> skipped;                        // entries of members that cannot run
  bool runnable() const {
    return std::any_of(members.begin(), members.end(), [](const auto& m) { return m != nullptr; });
  }
};

// Every strategy of one direction and pattern: the unit of interleaving. Its rounds run each
// unit once, in an order shuffled per round: a group alone, or an A/B pair of groups (a
// strategy and the same one copying with another engine build) measured sample by sample.
struct Block {
  Direction direction;
  Pattern pattern;
  DeviceThreads* threads = nullptr;  // where its members run
  std::vector<std::unique_ptr<CaseGroup>> groups;
};

struct Unit {
  CaseGroup* a = nullptr;
  CaseGroup* b = nullptr;  // the pair's baseline (VARIANT@base); null for a group alone
};

// `engine@base` pairs with `engine@cand`, else with `engine` (compare/in_process.h,
// ab_partners); every other group runs alone.
std::vector<Unit> units_of(const Block& block) {
  std::vector<Unit> units;
  std::vector<bool> paired(block.groups.size(), false);
  const auto index_of = [&](const std::string& strategy) {
    for (size_t j = 0; j < block.groups.size(); ++j) {
      if (!paired[j] && block.groups[j]->strategy == strategy) return j;
    }
    return block.groups.size();
  };
  for (size_t i = 0; i < block.groups.size(); ++i) {
    for (const std::string& partner : compare::ab_partners(block.groups[i]->strategy)) {
      const size_t j = index_of(partner);
      if (j == block.groups.size()) continue;
      paired[i] = paired[j] = true;
      units.push_back(Unit{block.groups[j].get(), block.groups[i].get()});
      break;
    }
  }
  for (size_t i = 0; i < block.groups.size(); ++i) {
    if (!paired[i]) units.push_back(Unit{block.groups[i].get(), nullptr});
  }
  return units;
}

Entry skipped_entry(Direction direction, Pattern pattern, const std::string& strategy, int device,
                    std::string reason) {
  Entry e;
  e.device = device;
  e.direction = std::string(to_string(direction));
  e.strategy = strategy;
  e.pattern = std::string(to_string(pattern));
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
    const mtc::nvtx::scoped_range range{group.label.c_str()};
    guarded(*member, [&] { member->prepare(); });
    guarded(*member, [&] { member->warmup(settings.warmup); });
    guarded(*member, [&] { member->verify(); });
  });
}

// One round of a unit on every GPU thread: a group's member alone, or the pair's two members
// sampled alternately; a side that cannot run leaves the other to measure alone.
void measure_round(const Unit& unit, DeviceThreads& threads, const CaseSettings& settings,
                   int process, Progress& progress, uint64_t round, uint64_t salt) {
  MeasureGroup sync(static_cast<int>(unit.a->members.size()));
  threads.run([&](size_t i) {
    CaseRunner* a = unit.a->members[i].get();
    CaseRunner* b = unit.b != nullptr ? unit.b->members[i].get() : nullptr;
    const bool a_runs = a != nullptr && a->ok();
    const bool b_runs = b != nullptr && b->ok();
    Progress* shown = i == 0 ? &progress : nullptr;
    const mtc::nvtx::scoped_range range{unit.a->label.c_str()};
    if (a_runs && b_runs) {
      measure_paired_round(
          *a, *b, settings, sync, process, shown,
          PairOrder(settings.order_seed, round, salt * 64 + static_cast<uint64_t>(i)));
    } else if (a_runs || b_runs) {
      (a_runs ? a : b)->measure_round(settings, sync, process, shown);
    } else {
      sync.withdraw();
    }
  });
}

// The stopping verdicts of a block after a round; kNone while it goes on. A limit hit by one
// case (timeout, max_samples, max_rounds) ends the block for all: interleaving needs every case
// in every round.
StopReason block_verdict(const Block& block, const StoppingParams& params) {
  bool all_satisfied = true;
  for (const auto& group : block.groups) {
    for (const auto& member : group->members) {
      if (member == nullptr || !member->ok()) continue;
      const StopReason verdict = case_verdict(params, member->progress());
      if (verdict == StopReason::kNoiseTarget) continue;
      if (verdict != StopReason::kNone) return verdict;
      all_satisfied = false;
    }
  }
  return all_satisfied ? StopReason::kNoiseTarget : StopReason::kNone;
}

void measure_block(Block& block, const CaseSettings& settings, int process, Progress& progress,
                   HostCanary& canary, RoundConfinement& confinement,
                   std::vector<CanaryRecord>& readings, std::vector<std::string>& notes) {
  const uint64_t salt =
      static_cast<uint64_t>(block.direction) * 16 + static_cast<uint64_t>(block.pattern);
  const std::string what =
      fmt::format("{} {}", to_string(block.direction), to_string(block.pattern));
  StopReason verdict = StopReason::kNone;
  const int64_t max_rounds = settings.fixed_samples > 0 ? 1 : settings.stopping.max_rounds;
  const std::vector<Unit> units = units_of(block);
  for (int64_t round = 0; round < max_rounds && verdict == StopReason::kNone; ++round) {
    readings.push_back({std::string(to_string(block.direction)),
                        std::string(to_string(block.pattern)), round, canary.read(), process});
    const std::vector<size_t> order = round_order(units.size(), settings.order_seed, round, salt);
    for (size_t index : order) {
      const Unit& unit = units[index];
      if (!unit.a->runnable() && (unit.b == nullptr || !unit.b->runnable())) continue;
      progress.begin_case(fmt::format("{} round {}/{} {}{}", what, round + 1, max_rounds,
                                      unit.a->label,
                                      unit.b != nullptr ? " with " + unit.b->strategy : ""));
      const std::string refused =
          confinement.confine(settings.order_seed, static_cast<uint64_t>(round), salt * 64 + index);
      if (!refused.empty()) notes.push_back(refused);
      measure_round(unit, *block.threads, settings, process, progress, static_cast<uint64_t>(round),
                    salt);
      progress.end_case();
    }
    verdict = settings.fixed_samples > 0 ? StopReason::kFixedCount
                                         : block_verdict(block, settings.stopping);
    // A started round completes, so every case has samples; no new one starts. A case whose
    // rule was met by that round says so; the others were cut short.
    if (interrupted() && verdict == StopReason::kNone) verdict = StopReason::kInterrupted;
  }
  if (verdict == StopReason::kNone) verdict = StopReason::kMaxRounds;
  for (const auto& group : block.groups) {
    for (const auto& member : group->members) {
      if (member == nullptr) continue;
      const StopReason own = case_verdict(settings.stopping, member->progress());
      member->set_stop_reason(settings.fixed_samples > 0        ? StopReason::kFixedCount
                              : own == StopReason::kNoiseTarget ? own
                                                                : verdict);
    }
  }
}

void collect(Block& block, const CaseSettings& settings, const WorkloadSize& size,
             std::vector<Entry>& entries) {
  for (auto& group : block.groups) {
    for (Entry& e : group->skipped) entries.push_back(std::move(e));
    for (const auto& member : group->members) {
      if (member) entries.push_back(member->entry(settings, size));
    }
  }
}

}  // namespace

std::optional<Route> route_for(Direction direction, int device, int cuda_device_count,
                               std::string& why) {
  const c10::Device cpu(c10::kCPU);
  const auto gpu = [](int index) {
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  };
  switch (direction) {
    case Direction::kH2H:
      return Route{direction, cpu, cpu};
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
        why =
            "needs two GPUs: with one, every leaf is already on the target and the engine returns "
            "it as it is";
        return std::nullopt;
      }
      return Route{direction, gpu(device), gpu((device + 1) % cuda_device_count)};
  }
  why = "unknown direction";
  return std::nullopt;
}

c10::IValue input_for(const c10::IValue& workload, Direction direction, int device, bool several) {
  if (direction == Direction::kH2D || direction == Direction::kH2H) {
    if (!several) return workload;
    return own_structure(workload, [](const at::Tensor& t) { return t.clone(); });
  }
  const c10::Device gpu(c10::kCUDA, static_cast<c10::DeviceIndex>(device));
  c10::IValue moved = own_structure(
      workload, [&](const at::Tensor& t) { return t.to(at::TensorOptions().device(gpu)); });
  c10::cuda::CUDAGuard guard(gpu.index());
  c10::cuda::device_synchronize();
  return moved;
}

RunOutcome run_benchmarks(const std::vector<c10::IValue>& workloads, const RunPlan& plan,
                          const LoadedEngines& engines, Progress& progress) {
  RunOutcome outcome;
  const LeafCount count = count_tensors(workloads.front());
  const WorkloadSize size{count.tensors, count.bytes};
  const bool cuda = plan.cuda_device_count > 0;
  // h2h does not involve a GPU: one thread is enough whatever --devices says.
  const std::vector<int> gpu_threads =
      cuda && !plan.devices.empty() ? plan.devices : std::vector<int>{-1};
  DeviceThreads cpu_pool(std::vector<int>{-1});
  DeviceThreads gpu_pool(gpu_threads);
  const CaseSettings& settings = plan.settings;
  const mtc::CopyOptions engine_base = engine_options(plan.engine);
  const size_t total_cases =
      plan.directions.size() * plan.strategies.size() * settings.patterns.size();
  size_t case_number = 0;
  // The host's probe of every round, on the first GPU (env/host_canary.h).
  HostCanary canary(cuda ? gpu_threads.front() : -1);
  RoundConfinement confinement(settings.round_cpus);
  // With --profile every block is measured only after all are prepared; kept in table order.
  std::vector<std::unique_ptr<Block>> deferred;

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
      case_number += plan.strategies.size() * settings.patterns.size();
      continue;
    }

    for (const Pattern pattern : settings.patterns) {
      if (interrupted()) break;  // no new block is prepared or measured
      // The hot pattern copies the first input only; moving the others to a GPU would be waste.
      const size_t used = pattern == Pattern::kHot ? 1 : workloads.size();
      std::vector<std::vector<c10::IValue>> inputs(devices.size());
      {
        MTC_RANGE(setup, "setup");
        threads.run([&](size_t i) {
          for (size_t k = 0; k < used; ++k)
            inputs[i].push_back(input_for(workloads[k], direction, devices[i], devices.size() > 1));
        });
      }
      auto block = std::make_unique<Block>(Block{direction, pattern, &threads, {}});
      for (const std::string& name : plan.strategies) {
        ++case_number;
        auto group = std::make_unique<CaseGroup>();
        group->strategy = name;
        group->label = fmt::format("[{}/{}] {}", case_number, total_cases, name);
        const StrategyInfo& info = *find_strategy(name);
        const std::string static_reason = unsupported_reason(info, direction, cuda);
        for (size_t i = 0; i < devices.size(); ++i) {
          auto strategy = make_strategy(name, engine_base, engines);
          std::string reason =
              static_reason.empty() ? strategy->unsupported_reason(*routes[i]) : static_reason;
          if (!reason.empty()) {
            group->skipped.push_back(
                skipped_entry(direction, pattern, name, devices[i], std::move(reason)));
            group->members.emplace_back(nullptr);
            continue;
          }
          group->members.push_back(std::make_unique<CaseRunner>(std::move(strategy), *routes[i],
                                                                inputs[i], pattern, devices[i]));
        }
        if (group->runnable()) prepare_phases(*group, threads, settings);
        block->groups.push_back(std::move(group));
      }
      if (plan.profile) {
        deferred.push_back(std::move(block));
        continue;
      }
      measure_block(*block, settings, plan.process_index, progress, canary, confinement,
                    outcome.canary, outcome.notes);
      collect(*block, settings, size, outcome.entries);
    }
  }

  if (plan.profile) {
    // Only the fixed-count samples go between Start and Stop, so
    // `nsys profile --capture-range=cudaProfilerApi` records them and nothing of the set-up.
    if (cuda) cudaProfilerStart();
    for (auto& block : deferred) {
      measure_block(*block, settings, plan.process_index, progress, canary, confinement,
                    outcome.canary, outcome.notes);
    }
    if (cuda) cudaProfilerStop();
    for (auto& block : deferred) collect(*block, settings, size, outcome.entries);
  }
  return outcome;
}

}  // namespace mtc::bench
