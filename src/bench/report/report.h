// The report's data model: what one invocation measured, independent of how it is shown.
// Pure (no ATen); reporters (console, JSON, markdown) render it, report_reader.h reads the JSON
// back (for `compare` and the merge of --processes). The schema version and status names are in
// types.h.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stats/rounds.h"
#include "stats/summary.h"
#include "types.h"

namespace mtc::bench {

// The candidate of an A/B pair measured sample by sample (measure/paired_round.h): per round,
// the median over the round's steps of ln(candidate's sample / baseline's sample of the same
// step); empty where a round had no step with both. The two samples of a step are taken back to
// back, so they share the host's moment more closely than the two round medians do.
struct PairedSteps {
  std::string baseline;  // the strategy it was paired with, e.g. engine@base
  std::vector<std::optional<double>> median_log_ratio;  // per round, aligned with rounds
};

// One (device, direction, strategy, pattern) case.
struct Entry {
  int device = -1;  // the GPU whose thread ran it; -1 without a GPU
  std::string direction;
  std::string strategy;
  std::string pattern;  // "hot" or "step" (types.h)
  std::string source;   // "cpu", "cuda:0", ...
  std::string target;
  EntryStatus status = EntryStatus::kOk;
  std::string reason;            // why skipped or failed; empty when ok
  std::optional<bool> verified;  // empty when it never ran
  std::string stop_reason;       // StopReason as text
  int64_t warmup = 0;
  double measure_time_s = 0.0;     // wall time of the measuring loops, gaps included
  RoundsSummary rounds;            // per-round medians, the interval of the median, noise
  Summary wall;                    // start until usable on the target, synchronized; pooled over
                                   // rounds, its noise is rounds.reported()
  Summary caller_blocked;          // how long the start call kept the caller
  std::optional<Summary> gpu;      // CUDA events around the sample; none for h2h
  Summary cpu;                     // process CPU time (all threads) during the sample
  std::optional<Summary> exposed;  // overlap mode: wall minus the simulated caller work
  double gb_per_s = 0.0;           // workload bytes / median wall, 1e9 bytes per second
  double tensors_per_s = 0.0;
  // `to` / this, paired per round, same device, direction and pattern.
  std::optional<RatioEstimate> speedup;
  std::optional<PairedSteps> paired_steps;  // an A/B pair's candidate only
  nlohmann::json engine;       // engine options and CopyStats; null for other strategies
  nlohmann::json raw_samples;  // per-sample series when asked for; null otherwise

  bool ok() const { return status == EntryStatus::kOk; }
};

// Several GPUs driven at once: the figures of one (direction, strategy) over all of them.
struct Aggregate {
  std::string direction;
  std::string strategy;
  std::vector<int> devices;
  double gb_per_s = 0.0;          // sum over the GPUs
  double tensors_per_s = 0.0;     // sum over the GPUs
  double slowest_median_s = 0.0;  // the largest per-GPU median wall time
  std::string pattern;
};

// One loaded config (one point of a sweep) and everything measured on it.
struct RunSection {
  nlohmann::json sweep_point = nlohmann::json::object();  // {"samples": "16"}; {} without sweeps
  std::string config_file;
  std::string config_name;
  uint64_t seed = 0;
  nlohmann::json config_given;
  nlohmann::json config_resolved;
  nlohmann::json settings;    // the bench settings after the command line's overrides
  nlohmann::json workload;    // the workload summary
  std::string workload_hash;  // identifies the exact workload across reports (workload_hash())
  int64_t tensors = 0;
  int64_t bytes = 0;
  std::vector<Entry> entries;
  std::vector<Aggregate> aggregates;
  std::vector<std::string> notes;        // e.g. why a direction was skipped
  nlohmann::json host_canary = nullptr;  // env/host_canary.h: the host probe of every round
};

struct Report {
  nlohmann::json context;  // environment: tool, host, CPU, GPUs, driver, runtime, torch
  std::vector<std::string> command_line;
  bool profile = false;
  nlohmann::json ab = nullptr;  // {"job", "side", "round"} when one side of an A/B job
  std::vector<RunSection> runs;
  int exit_code = 0;
  bool interrupted = false;  // SIGINT/SIGTERM stopped the run: the runs hold what finished
};

// 16 hex digits: FNV-1a 64 over the resolved config's canonical JSON and the seed, so two
// reports of the same config, parameters and seed match in `compare`.
std::string workload_hash(const nlohmann::json& config_resolved, uint64_t seed);

// Fills each entry's speedup against the baseline strategy of the same device and direction.
void compute_speedups(RunSection& run);
// Sums per-GPU figures when a run drove more than one GPU.
void compute_aggregates(RunSection& run);

// object[key] where `object` is an object holding a string there, else `fallback`: what the
// outputs show of a report's context, which a report read back from a file may hold anything in.
std::string text_field(const nlohmann::json& object, const char* key, const std::string& fallback);

// context.malloc where it names another allocator than the C library's ("libc.so.6 (glibc ...)"),
// else "": the C library's of any version, or a report written before the field (all of which
// ran with glibc's). The allocator moves the engine's times by a quarter, glibc's version does not:
// the summary names such an allocator, and `compare` judges no case across two of them.
std::string other_malloc_than_libc(const nlohmann::json& context);

// The process exit code the entries call for: 4 if any output failed verification (wrong data
// is the worse finding), else 3 if any case failed at run time, else 0.
int exit_code_for(const Report& report);

}  // namespace mtc::bench
