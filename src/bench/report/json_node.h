// A value of a parsed JSON document together with its JSON pointer and file, so that a reader
// that finds a member missing or of the wrong type throws a ConfigError naming the place:
// "FILE: /runs/0/results/2/wall_s/median: expected a number". What report_reader.cpp reads
// documents with.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mtc::bench {

class JsonNode {
 public:
  // `value` and `file` must outlive the node and every node taken from it.
  JsonNode(const nlohmann::json& value, std::string pointer, const std::string& file);

  const nlohmann::json& value() const { return *value_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& file() const { return *file_; }
  bool is_null() const { return value_->is_null(); }

  // A member that must be there (null is there); this node must be an object.
  JsonNode operator[](const char* key) const;
  // A member that may be absent: empty when it is absent or null.
  std::optional<JsonNode> find(const char* key) const;
  // Element `index` of an array (index < size()).
  JsonNode at(size_t index) const;
  // The number of elements; this node must be an array.
  size_t size() const;

  // The value, which must be an object.
  const nlohmann::json& object() const;
  std::string string() const;
  bool boolean() const;
  double number() const;
  // A number, or NaN for null.
  double number_or_nan() const;
  std::optional<double> number_or_null() const;
  int64_t integer() const;
  // An integer that fits an int.
  int small_integer() const;
  // An integer >= 0 up to 2^64 - 1 (seeds).
  uint64_t unsigned_integer() const;

  [[noreturn]] void fail(const std::string& message) const;

 private:
  const nlohmann::json* value_;
  std::string pointer_;
  const std::string* file_;
};

}  // namespace mtc::bench
