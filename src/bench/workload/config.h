// Benchmark configs: a JSON file that names a workload (a spec of nested tensors, or a batch
// saved with torch.save), a seed, the copy directions and the benchmark settings. The format
// is documented in configs/README.md and described by configs/spec.schema.json.
//
// Every problem in a config, spec or input file throws ConfigError (errors.h) naming the file
// and the JSON pointer of the offending value; the application maps it to exit code 2.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "errors.h"

namespace mtc::bench {

namespace detail {
struct WorkloadSpec;
}

// The config's optional "bench" object; the defaults live here and nowhere else.
struct BenchSettings {
  int warmup = 5;  // warm-up iterations per strategy
  int min_samples = 10;                 // per case, over all rounds
  double min_time_s = 0.25;             // accumulated sample time per case, over all rounds
  double noise_target = 0.01;           // reported relative noise of the median at which rounds may stop
  double timeout_s = 15.0;              // loop time per case, over all rounds
  std::vector<std::string> patterns{"hot", "step"};
  int inputs = 8;                       // step pattern: inputs in rotation (successive seeds)
  double gap_us = 2000.0;               // step pattern: idle gap before each sample
  int min_rounds = 5;
  int max_rounds = 20;
  double round_time_s = 0.05;           // loop time per case and round
  int processes = 3;                    // fresh processes sharing the rounds (--processes)
  std::vector<std::string> strategies;  // empty = all
  std::vector<int> devices;             // empty = device 0
  double overlap_us = 0.0;              // simulated caller work between start and get
  bool raw_samples = false;             // keep raw samples in the JSON report
};

struct Config {
  std::string file;  // path given (or the .pt path)
  std::string name;
  uint64_t seed = 0;
  std::vector<std::string> directions;  // subset of "h2d","d2h","d2d","h2h"; default {"h2d","d2h"}
  BenchSettings bench;
  nlohmann::json given;     // the JSON as written
  nlohmann::json resolved;  // after --set overrides, with defaults filled in
  // The validated workload description; .npy and .pt inputs are already read. Immutable and
  // shared between copies of the Config.
  std::shared_ptr<const detail::WorkloadSpec> workload;
};

// Reads and validates a config. `sets` are "--set NAME=VALUE" strings: NAME is a parameter
// declared in the config's "params" object (e.g. samples=64) or a JSON pointer (/bench/warmup=20);
// VALUE is parsed as JSON, falling back to a plain string. Throws ConfigError (exit 2).
Config load_config(const std::string& path, const std::vector<std::string>& sets = {});

// The same from text already in memory; `file` names it in errors, and relative paths inside
// (.npy and .pt inputs) are taken relative to its directory.
Config parse_config(const std::string& text, const std::string& file,
                    const std::vector<std::string>& sets = {});

// A config whose workload is a batch saved with torch.save (for `mtc-bench --input batch.pt`):
// named after the file, default seed, directions and settings; `sets` may override those
// (JSON pointers such as /bench/warmup=3).
Config config_from_saved_batch(const std::string& pt_path,
                               const std::vector<std::string>& sets = {});

}  // namespace mtc::bench
