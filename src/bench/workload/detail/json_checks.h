// Typed reads of JSON values that fail with a ConfigError naming the file and the JSON pointer
// of the value; shared by the config and spec parsers so every message has the same form.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace mtc::bench::detail {

// Key order matters (it becomes dict order in the workload), so specs are read as ordered_json.
using Json = nlohmann::ordered_json;

// JSON pointer of a member or element (RFC 6901 escaping of '~' and '/').
std::string child_path(const std::string& parent, const std::string& key);
std::string child_path(const std::string& parent, size_t index);

// "an integer", "a string", ... for messages.
std::string type_name(const Json& value);
// The value as JSON text, cut for messages as shown() cuts text (shown.h).
std::string brief(const Json& value);
// The candidate closest to `given` by edit distance when it is plausibly a typo, else "".
std::string closest_name(const std::string& given, const std::vector<std::string>& candidates);
std::string join(const std::vector<std::string>& items, const std::string& separator = ", ");

class JsonChecks {
 public:
  explicit JsonChecks(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }

  [[noreturn]] void fail(const std::string& path, const std::string& message) const;

  void expect_object(const Json& value, const std::string& path) const;
  void expect_array(const Json& value, const std::string& path) const;
  // Every member of `object` must be one of `allowed`; an unknown one fails at its own path.
  void allow_keys(const Json& object, const std::string& path,
                  const std::vector<std::string>& allowed) const;
  void require_key(const Json& object, const std::string& path, const std::string& key) const;
  // The one member of a one-of object ({"uniform": [0, 9]}), its name one of `kinds`; `what`
  // names the object in the error ("a value distribution"). The body points into `object`.
  std::pair<std::string, const Json*> single_member(const Json& object, const std::string& path,
                                                    const std::vector<std::string>& kinds,
                                                    const std::string& what) const;

  std::string get_string(const Json& value, const std::string& path) const;
  bool get_bool(const Json& value, const std::string& path) const;
  // Integral values only (4.0 counts, 4.5 does not), within [lo, hi].
  int64_t get_int(const Json& value, const std::string& path,
                  int64_t lo = std::numeric_limits<int64_t>::min(),
                  int64_t hi = std::numeric_limits<int64_t>::max()) const;
  uint64_t get_uint64(const Json& value, const std::string& path) const;
  // A finite number within [lo, hi].
  double get_number(const Json& value, const std::string& path,
                    double lo = -std::numeric_limits<double>::max(),
                    double hi = std::numeric_limits<double>::max()) const;

 private:
  std::string file_;
};

}  // namespace mtc::bench::detail
