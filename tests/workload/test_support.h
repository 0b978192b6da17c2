// Helpers shared by the workload tests: fixture and config locations, temporary config files,
// a content hash of a built workload, and a matcher for ConfigError.
#pragma once

#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "errors.h"
#include "workload/config.h"

namespace mtc::bench::testing {

inline std::filesystem::path fixtures_dir() { return MTC_WORKLOAD_FIXTURES; }
inline std::filesystem::path configs_dir() { return MTC_CONFIGS_DIR; }
inline std::string fixture(const std::string& relative) {
  return (fixtures_dir() / relative).string();
}

// A directory removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;  // owns the directory
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to `name` inside the directory; returns the file's path.
  std::string write(const std::string& name, const std::string& text) const;
  void make_directory(const std::string& name) const;

 private:
  std::filesystem::path path_;
};

// Parses a config given as text (its relative paths resolve against the fixtures directory).
Config config_from_text(const std::string& text, const std::vector<std::string>& sets = {});

// FNV-1a over everything a workload is: container kinds and keys, leaf values, and every
// tensor's dtype, shape, strides and element bytes in logical order.
uint64_t content_hash(const c10::IValue& value);

// Runs `action`, which must throw ConfigError; checks the JSON pointer and that the message
// contains `message_part`.
void expect_config_error(const std::function<void()>& action, const std::string& json_path,
                         const std::string& message_part);

}  // namespace mtc::bench::testing
