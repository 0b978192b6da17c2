// The synthetic reports of data/ (see make_fixtures.py for what each one holds), and edited
// copies of them for the cases a test needs once.
#pragma once

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "temp_dir.h"

namespace mtc::bench::compare::testing_support {

inline std::string data(const std::string& name) {
  return std::string(MTC_COMPARE_DATA) + "/" + name;
}

inline nlohmann::json load(const std::string& name) {
  return nlohmann::json::parse(std::ifstream(data(name)));
}

// Writes data/`source` changed by `edit` to dir/`name`; returns its path.
inline std::string edited(const mtc::bench::testing_support::TempDir& dir, const std::string& name,
                          const std::string& source,
                          const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json doc = load(source);
  edit(doc);
  const std::string path = dir / name;
  std::ofstream(path) << doc.dump(1);
  return path;
}

}  // namespace mtc::bench::compare::testing_support
