#include "runner/report/report.h"

#include "errors.h"
#include "runner/strategies/catalog.h"

#include <algorithm>
#include <map>
#include <utility>

namespace mtc::bench {

std::string_view to_string(EntryStatus status) {
  switch (status) {
    case EntryStatus::kOk: return "ok";
    case EntryStatus::kSkipped: return "skipped";
    case EntryStatus::kFailed: return "failed";
    case EntryStatus::kVerificationFailed: return "verification_failed";
  }
  return "failed";
}

void compute_speedups(RunSection& run) {
  for (Entry& entry : run.entries) {
    entry.speedup.reset();
    if (!entry.ok() || entry.wall.median <= 0.0) continue;
    for (const Entry& base : run.entries) {
      if (base.ok() && base.strategy == kBaselineStrategy && base.device == entry.device &&
          base.direction == entry.direction) {
        entry.speedup = base.wall.median / entry.wall.median;
        break;
      }
    }
  }
}

void compute_aggregates(RunSection& run) {
  run.aggregates.clear();
  // Keyed by (direction, strategy) in first-seen order so the output follows the table.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const Entry*>> groups;
  for (const Entry& entry : run.entries) {
    auto key = std::make_pair(entry.direction, entry.strategy);
    if (!groups.contains(key)) order.push_back(key);
    groups[key].push_back(&entry);
  }
  for (const auto& key : order) {
    const auto& members = groups[key];
    if (members.size() < 2) continue;
    if (!std::all_of(members.begin(), members.end(), [](const Entry* e) { return e->ok(); })) continue;
    Aggregate agg;
    agg.direction = key.first;
    agg.strategy = key.second;
    for (const Entry* e : members) {
      agg.devices.push_back(e->device);
      agg.gb_per_s += e->gb_per_s;
      agg.tensors_per_s += e->tensors_per_s;
      agg.slowest_median_s = std::max(agg.slowest_median_s, e->wall.median);
    }
    run.aggregates.push_back(std::move(agg));
  }
}

}  // namespace mtc::bench

namespace mtc::bench {

int exit_code_for(const Report& report) {
  bool failed = false;
  for (const RunSection& run : report.runs) {
    for (const Entry& e : run.entries) {
      if (e.status == EntryStatus::kVerificationFailed) return static_cast<int>(ExitCode::kVerification);
      failed = failed || e.status == EntryStatus::kFailed;
    }
  }
  return static_cast<int>(failed ? ExitCode::kRuntime : ExitCode::kOk);
}

}  // namespace mtc::bench
