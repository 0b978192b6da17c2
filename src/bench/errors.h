// Error kinds of the benchmark application and the exit code each one maps to.
#pragma once

#include <stdexcept>
#include <string>

#include "shown.h"

namespace mtc::bench {

// Documented in docs/cli.md; scripts and CI rely on these values.
enum class ExitCode : int {
  kOk = 0,
  kRegression = 1,     // `compare` found a regression
  kUsage = 2,          // bad command line, config, spec or input file
  kRuntime = 3,        // CUDA or other runtime failure
  kVerification = 4,   // a strategy's output differs from its input
  kInterrupted = 130,  // SIGINT or SIGTERM stopped the run (128 + SIGINT, as shells report it)
};

// A bad config, spec or input file. `where` names the place: a file and a JSON pointer
// (`configs/x.json: /structure/cams/item/shape/0`) or a file and a tensor index.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::string json_path, const std::string& message)
      : std::runtime_error(format(file, json_path, message)),
        file_(std::move(file)),
        json_path_(std::move(json_path)) {}
  const std::string& file() const { return file_; }
  const std::string& json_path() const { return json_path_; }

 private:
  // The file and the pointer are shown as paths are (shown.h); file() and json_path() keep them
  // whole.
  static std::string format(const std::string& file, const std::string& path,
                            const std::string& message) {
    std::string out = file.empty() ? std::string("<config>") : shown_path(file);
    if (!path.empty()) out += ": " + shown_path(path);
    return out + ": " + message;
  }
  std::string file_;
  std::string json_path_;
};

// A bad command line (unknown strategy, malformed --set, ...).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A copy produced something other than its input.
class VerificationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mtc::bench
