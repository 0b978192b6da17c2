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
#include "workload/bench_settings.h"

namespace mtc::bench {

namespace detail {
struct WorkloadSpec;
}

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

// A config file's text, read whole once it is known to be a readable regular file within the
// size a config may have (a folder, a named pipe or a huge file is refused before any read).
// Throws ConfigError (exit 2).
std::string read_config_text(const std::string& path);

// The same from text already in memory; `file` names it in errors, and relative paths inside
// (.npy and .pt inputs) are taken relative to its directory.
Config parse_config(const std::string& text, const std::string& file,
                    const std::vector<std::string>& sets = {});

// The .npy and .pt files `config`'s workload was read from (paths as the config resolved them),
// for commands that must not write over them.
std::vector<std::string> data_files(const Config& config);

// A config whose workload is a batch saved with torch.save (for `mtc-bench --input batch.pt`):
// named after the file, default seed, directions and settings; `sets` may override those
// (JSON pointers such as /bench/warmup=3).
Config config_from_saved_batch(const std::string& pt_path,
                               const std::vector<std::string>& sets = {});

}  // namespace mtc::bench
