#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "errors.h"

namespace mtc::bench {

std::string workload_hash(const nlohmann::json& config_resolved, uint64_t seed) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  const auto mix = [&hash](std::string_view bytes) {
    for (const char c : bytes) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001b3ULL;
    }
  };
  // nlohmann's dump() sorts object keys (std::map), so equal configs give equal text.
  mix(config_resolved.dump());
  mix(std::to_string(seed));
  return fmt::format("{:016x}", hash);
}

void compute_speedups(RunSection& run) {
  for (Entry& entry : run.entries) {
    entry.speedup.reset();
    if (!entry.ok() || entry.wall.median <= 0.0) continue;
    for (const Entry& base : run.entries) {
      if (base.ok() && base.strategy == kBaselineStrategy && base.device == entry.device &&
          base.direction == entry.direction && base.pattern == entry.pattern) {
        // Round r of every case of a block ran in the same round of interleaving, so the pair
        // shares the host's state of that moment.
        entry.speedup =
            paired_ratio(base.rounds.medians, entry.rounds.medians, entry.rounds.interval.level);
        break;
      }
    }
  }
}

void compute_aggregates(RunSection& run) {
  run.aggregates.clear();
  // Keyed by (direction, strategy, pattern) in first-seen order so the output follows the table.
  using Key = std::tuple<std::string, std::string, std::string>;
  std::vector<Key> order;
  std::map<Key, std::vector<const Entry*>> groups;
  for (const Entry& entry : run.entries) {
    Key key{entry.direction, entry.strategy, entry.pattern};
    if (!groups.contains(key)) order.push_back(key);
    groups[key].push_back(&entry);
  }
  for (const auto& key : order) {
    const auto& members = groups[key];
    if (members.size() < 2) continue;
    if (!std::all_of(members.begin(), members.end(), [](const Entry* e) { return e->ok(); }))
      continue;
    Aggregate agg;
    agg.direction = std::get<0>(key);
    agg.strategy = std::get<1>(key);
    agg.pattern = std::get<2>(key);
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
      if (e.status == EntryStatus::kVerificationFailed)
        return static_cast<int>(ExitCode::kVerification);
      failed = failed || e.status == EntryStatus::kFailed;
    }
  }
  return static_cast<int>(failed ? ExitCode::kRuntime : ExitCode::kOk);
}

std::string text_field(const nlohmann::json& object, const char* key, const std::string& fallback) {
  const auto it = object.is_object() ? object.find(key) : object.end();
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string other_malloc_than_libc(const nlohmann::json& context) {
  const std::string name = text_field(context, "malloc", "");
  return name.rfind("libc.so", 0) == 0 ? "" : name;
}

}  // namespace mtc::bench
