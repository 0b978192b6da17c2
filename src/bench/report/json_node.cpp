#include "report/json_node.h"

#include <limits>
#include <utility>

#include "errors.h"

namespace mtc::bench {

JsonNode::JsonNode(const nlohmann::json& value, std::string pointer, const std::string& file)
    : value_(&value), pointer_(std::move(pointer)), file_(&file) {}

void JsonNode::fail(const std::string& message) const {
  throw ConfigError(*file_, pointer_, message);
}

JsonNode JsonNode::operator[](const char* key) const {
  const auto it = object().find(key);
  const JsonNode member(it == value_->end() ? *value_ : *it, pointer_ + "/" + key, *file_);
  if (it == value_->end()) member.fail("missing (not a schema v2 report?)");
  return member;
}

std::optional<JsonNode> JsonNode::find(const char* key) const {
  const auto it = object().find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return JsonNode(*it, pointer_ + "/" + key, *file_);
}

JsonNode JsonNode::at(size_t index) const {
  return JsonNode((*value_)[index], pointer_ + "/" + std::to_string(index), *file_);
}

size_t JsonNode::size() const {
  if (!value_->is_array()) fail("expected an array");
  return value_->size();
}

const nlohmann::json& JsonNode::object() const {
  if (!value_->is_object()) fail("expected an object");
  return *value_;
}

std::string JsonNode::string() const {
  if (!value_->is_string()) fail("expected a string");
  return value_->get<std::string>();
}

bool JsonNode::boolean() const {
  if (!value_->is_boolean()) fail("expected true or false");
  return value_->get<bool>();
}

double JsonNode::number() const {
  if (!value_->is_number()) fail("expected a number");
  return value_->get<double>();
}

double JsonNode::number_or_nan() const {
  return number_or_null().value_or(std::numeric_limits<double>::quiet_NaN());
}

std::optional<double> JsonNode::number_or_null() const {
  if (value_->is_null()) return std::nullopt;
  if (!value_->is_number()) fail("expected a number or null");
  return value_->get<double>();
}

int64_t JsonNode::integer() const {
  if (!value_->is_number_integer()) fail("expected an integer");
  // An unsigned value beyond int64's range is refused rather than wrapped.
  if (value_->is_number_unsigned() &&
      value_->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail("expected an integer");
  }
  return value_->get<int64_t>();
}

int JsonNode::small_integer() const {
  const int64_t value = integer();
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    fail("expected an integer");
  }
  return static_cast<int>(value);
}

uint64_t JsonNode::unsigned_integer() const {
  if (value_->is_number_unsigned()) return value_->get<uint64_t>();
  if (!value_->is_number_integer() || value_->get<int64_t>() < 0) fail("expected an integer >= 0");
  return static_cast<uint64_t>(value_->get<int64_t>());
}

}  // namespace mtc::bench
