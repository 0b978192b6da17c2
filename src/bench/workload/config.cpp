#include "workload/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "files.h"
#include "shown.h"
#include "workload/detail/bench_settings_parser.h"
#include "workload/detail/json_checks.h"
#include "workload/detail/spec_parser.h"
#include "workload/detail/tensor_spec_parser.h"

namespace mtc::bench {
namespace {

namespace fs = std::filesystem;
using detail::child_path;
using detail::Json;
using detail::JsonChecks;

constexpr uint64_t kMaxConfigBytes = 16 << 20;
// nlohmann's parser and our own walks recurse once per level; this keeps every one of them
// far from the stack limit whatever the input.
constexpr int kMaxJsonDepth = 256;

const std::vector<std::string>& top_level_keys() {
  static const std::vector<std::string> keys{"$schema",    "name",   "description", "seed",
                                             "directions", "params", "bench",       "defs",
                                             "structure",  "input"};
  return keys;
}

const std::vector<std::string>& direction_names() {
  static const std::vector<std::string> names{"h2d", "d2h", "d2d", "h2h"};
  return names;
}

// The deepest nesting of brackets in JSON text, outside strings; no recursion.
int text_depth(const std::string& text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// Rejects nesting beyond kMaxJsonDepth before any recursive code sees the text; `levels_above`:
// the containers the text will sit in (a --set value's place in the config).
void check_depth(const JsonChecks& checks, const std::string& text, const std::string& path,
                 int levels_above = 0) {
  if (levels_above + text_depth(text) > kMaxJsonDepth) {
    checks.fail(path, fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth));
  }
}

Json parse_json(const JsonChecks& checks, const std::string& text) {
  check_depth(checks, text, "");
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    std::string message = e.what();
    // "[json.exception.parse_error.101] parse error at line 3, ..." -> "parse error at line 3, ..."
    if (const auto bracket = message.find("] ");
        message.rfind("[json.", 0) == 0 && bracket != std::string::npos) {
      message = message.substr(bracket + 2);
    }
    // nlohmann quotes what it last read, an unclosed string's whole rest of the file: the message
    // is cut as a path is (shown.h).
    checks.fail("", "invalid JSON: " + shown_path(message));
  }
}

// --set VALUE: JSON when it parses as JSON, else the text itself as a string; `levels_above`:
// the containers it is set in, the config's own object included.
Json parse_set_value(const JsonChecks& checks, const std::string& text, const std::string& path,
                     int levels_above) {
  check_depth(checks, text, path, levels_above);
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_discarded()) return value;
  value = text;
  try {
    (void)value.dump();
  } catch (const Json::exception&) {
    checks.fail(path, "--set value is not valid UTF-8");
  }
  return value;
}

// The pointer's reference tokens, unescaped by nlohmann (which has no accessor for them all).
std::vector<std::string> pointer_tokens(Json::json_pointer pointer) {
  std::vector<std::string> tokens;
  for (; !pointer.empty(); pointer.pop_back()) tokens.push_back(pointer.back());
  std::reverse(tokens.begin(), tokens.end());
  return tokens;
}

// nlohmann fills an array with nulls up to a pointer's index past its end (--set
// /directions/1000000000000=1 ran out of memory): an index may name an element or the end only.
void check_pointer_indexes(const JsonChecks& checks, const Json& doc,
                           const std::vector<std::string>& tokens, const std::string& pointer,
                           const std::string& set) {
  const Json* node = &doc;
  for (const std::string& token : tokens) {
    if (node->is_object()) {
      const auto found = node->find(token);
      if (found == node->end()) return;  // a new key: what follows is made anew
      node = &*found;
      continue;
    }
    const bool digits =
        node->is_array() && !token.empty() &&
        std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) return;  // "-", a bad index or a scalar: nlohmann says what is wrong
    const size_t size = node->size();
    if (token.size() > 18 || std::stoull(token) > size) {
      checks.fail(pointer, fmt::format("--set '{}': index {} is past the end of an array of {}",
                                       shown(set), shown(token), size));
    }
    const size_t index = std::stoull(token);
    if (index == size) return;  // the end: a new element
    node = &(*node)[index];
  }
}

void apply_set(const JsonChecks& checks, Json& doc, const std::string& set) {
  const auto eq = set.find('=');
  if (eq == std::string::npos || eq == 0) {
    checks.fail("",
                fmt::format("--set '{}': expected NAME=VALUE (a parameter name or a JSON pointer "
                            "such as /bench/warmup)",
                            shown(set)));
  }
  const std::string name = set.substr(0, eq);
  if (name[0] == '/') {
    try {
      const Json::json_pointer pointer(name);
      const std::vector<std::string> tokens = pointer_tokens(pointer);
      // Each of the pointer's tokens is a level the value sits in (/bench/warmup: the config's
      // object and "bench"); a long pointer makes the objects it names, as deep as it is long.
      Json value =
          parse_set_value(checks, set.substr(eq + 1), name, static_cast<int>(tokens.size()));
      check_pointer_indexes(checks, doc, tokens, name, set);
      doc[pointer] = std::move(value);
    } catch (const Json::exception& e) {
      // nlohmann's message quotes the pointer's text too: shown as a path, its reason first.
      checks.fail(name, fmt::format("--set '{}': cannot set this JSON pointer ({})", shown(set),
                                    shown_path(e.what())));
    }
    return;
  }
  const std::string path = child_path("/params", name);
  if (!doc.contains("params") || !doc["params"].is_object() || !doc["params"].contains(name)) {
    std::vector<std::string> declared;
    if (doc.contains("params") && doc["params"].is_object()) {
      for (const auto& [key, unused] : doc["params"].items()) declared.push_back(key);
    }
    const std::string guess = detail::closest_name(name, declared);
    checks.fail(path,
                fmt::format("--set '{}': unknown parameter '{}'{}; declared in \"params\": {}",
                            shown(set), shown(name),
                            guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", shown(guess)),
                            declared.empty() ? "none" : shown_list(declared)));
  }
  doc["params"][name] = parse_set_value(checks, set.substr(eq + 1), path, 2);
}

// The levels of containers in `value` (a scalar has none); no recursion.
int json_depth(const Json& value) {
  int deepest = 0;
  std::vector<std::pair<const Json*, int>> stack{{&value, 0}};
  while (!stack.empty()) {
    const auto [node, above] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, above + 1);
    for (const Json& child : *node) stack.emplace_back(&child, above + 1);
  }
  return deepest;
}

// Replaces every {"param": NAME} object with the parameter's value. A value set deep in the
// config may nest it deeper than its text did: each of the path's tokens is a level above it.
void substitute_params(const JsonChecks& checks, Json& value, const std::string& path,
                       const Json& params) {
  if (value.is_object() && value.size() == 1 && value.contains("param")) {
    const std::string name = checks.get_string(value["param"], child_path(path, "param"));
    if (!params.contains(name)) {
      checks.fail(child_path(path, "param"),
                  fmt::format("unknown parameter '{}': declare it in \"params\"", shown(name)));
    }
    const auto levels_above = static_cast<int>(std::count(path.begin(), path.end(), '/'));
    if (levels_above + json_depth(params[name]) > kMaxJsonDepth) {
      checks.fail(path, fmt::format("JSON nested deeper than {} levels once parameter '{}' is "
                                    "put here",
                                    kMaxJsonDepth, shown(name)));
    }
    value = params[name];
    return;
  }
  if (value.is_object()) {
    for (auto& [key, child] : value.items())
      substitute_params(checks, child, child_path(path, key), params);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      substitute_params(checks, value[i], child_path(path, i), params);
  }
}

std::vector<std::string> parse_directions(const JsonChecks& checks, const Json& value) {
  checks.expect_array(value, "/directions");
  if (value.empty()) checks.fail("/directions", "at least one direction is needed");
  std::vector<std::string> out;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string path = child_path("/directions", i);
    const std::string direction = checks.get_string(value[i], path);
    if (!std::count(direction_names().begin(), direction_names().end(), direction)) {
      checks.fail(path, fmt::format("unknown direction '{}'; expected one of {}", shown(direction),
                                    detail::join(direction_names())));
    }
    if (std::count(out.begin(), out.end(), direction))
      checks.fail(path, fmt::format("duplicate direction '{}'", shown(direction)));
    out.push_back(direction);
  }
  return out;
}

}  // namespace

Config parse_config(const std::string& text, const std::string& file,
                    const std::vector<std::string>& sets) {
  const JsonChecks checks(file);
  Json doc = parse_json(checks, text);
  if (!doc.is_object())
    checks.fail("", fmt::format("a config is a JSON object, got {}", detail::type_name(doc)));
  Config config;
  config.file = file;
  config.given = nlohmann::json(doc);
  for (const auto& set : sets) apply_set(checks, doc, set);
  checks.allow_keys(doc, "", top_level_keys());

  if (doc.contains("$schema")) checks.get_string(doc["$schema"], "/$schema");
  if (doc.contains("description")) checks.get_string(doc["description"], "/description");
  if (doc.contains("name")) {
    config.name = checks.get_string(doc["name"], "/name");
    if (config.name.empty()) checks.fail("/name", "the name is empty");
  } else {
    config.name = file.empty() ? "workload" : fs::path(file).stem().string();
  }
  if (doc.contains("seed")) config.seed = checks.get_uint64(doc["seed"], "/seed");
  config.directions = doc.contains("directions") ? parse_directions(checks, doc["directions"])
                                                 : std::vector<std::string>{"h2d", "d2h"};
  if (doc.contains("bench"))
    config.bench = detail::parse_bench_settings(checks, doc["bench"], "/bench");

  Json params = Json::object();
  if (doc.contains("params")) {
    checks.expect_object(doc["params"], "/params");
    params = doc["params"];
    for (const auto& [name, unused] : params.items()) {
      if (!detail::is_symbol_name(name)) {
        checks.fail(
            child_path("/params", name),
            fmt::format("'{}' is not a parameter name ([A-Za-z_][A-Za-z0-9_]*)", shown(name)));
      }
    }
  }

  if (doc.contains("structure") == doc.contains("input")) {
    checks.fail("",
                "a config needs exactly one of \"structure\" (a workload spec) or \"input\" "
                "(a file saved with torch.save)");
  }
  const fs::path base_dir = fs::path(file).parent_path();
  if (doc.contains("input")) {
    if (doc.contains("defs"))
      checks.fail("/defs", "\"defs\" belongs with \"structure\", not \"input\"");
    Json input = doc["input"];
    substitute_params(checks, input, "/input", params);
    config.workload = detail::compile_input(checks, input, "/input", base_dir);
  } else {
    Json structure = doc["structure"];
    substitute_params(checks, structure, "/structure", params);
    Json defs;
    if (doc.contains("defs")) {
      defs = doc["defs"];
      substitute_params(checks, defs, "/defs", params);
    }
    config.workload = detail::compile_spec(checks, structure, "/structure",
                                           doc.contains("defs") ? &defs : nullptr, base_dir);
  }

  doc["name"] = config.name;
  doc["seed"] = config.seed;
  doc["directions"] = config.directions;
  doc["bench"] = detail::bench_settings_to_json(config.bench);
  config.resolved = nlohmann::json(doc);
  return config;
}

std::string read_config_text(const std::string& path) {
  return read_text_file(path, kMaxConfigBytes, "config");
}

Config load_config(const std::string& path, const std::vector<std::string>& sets) {
  return parse_config(read_config_text(path), path, sets);
}

Config config_from_saved_batch(const std::string& pt_path, const std::vector<std::string>& sets) {
  // The input path is absolute so that it does not depend on the synthesized config's location.
  if (pt_path.empty()) throw ConfigError(pt_path, "", "empty file name");
  Json doc = Json::object();
  const std::string stem = fs::path(pt_path).stem().string();
  doc["name"] = stem.empty() ? "batch" : stem;
  doc["input"] = absolute_path(pt_path);
  Config config = parse_config(doc.dump(), pt_path, sets);
  config.given = nlohmann::json{{"input", pt_path}};
  return config;
}

std::vector<std::string> data_files(const Config& config) {
  return config.workload ? config.workload->data_files : std::vector<std::string>{};
}

}  // namespace mtc::bench
