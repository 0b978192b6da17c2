// Bounded-time fuzzing of the config parser and builder: thousands of mutations of valid
// configs (bytes and JSON structure), each of which must either work or throw ConfigError:
// no crash, no hang, no other exception.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "test_support.h"
#include "workload/config.h"
#include "workload/random.h"
#include "workload/summary.h"
#include "workload/workload.h"

namespace mtc::bench {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr int kIterations = 3000;
constexpr auto kBudget = std::chrono::seconds(12);
constexpr auto kSlowInput = std::chrono::seconds(2);

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A config that touches every feature, loaded files included.
const char* kEverything = R"({
  "name": "everything", "seed": 5, "directions": ["h2d", "d2h", "d2d", "h2h"],
  "params": {"n": 3, "dist": {"uniform": [1, 4]}},
  "bench": {"warmup": 1, "min_samples": 2, "strategies": ["a"], "devices": [0], "raw_samples": true},
  "defs": {"leaf": {"tensor": {"dtype": "complex64", "shape": ["K", 2], "values": {"normal": {"mean": 0, "std": 1}},
                              "layout": {"transpose": [0, 1]}, "memory": "pinned"}}},
  "structure": {"dict": {
    "a": {"list": {"repeat": {"param": "n"}, "item": {"let": {"K": {"param": "dist"}}, "in": {"ref": "leaf"}}}},
    "b": {"list": {"for": {"K": [1, {"choice": [2, 3]}]}, "item": {"ref": "leaf"}}},
    "c": {"tuple": [{"cycle": ["x", 1, null]}, {"choose": [true, 2.5], "weights": [1, 2]}]},
    "d": {"tensor": {"dtype": "int16", "shape": [{"normal": {"mean": 4, "std": 2, "max": 9}}, {"poisson": {"mean": 3}}],
                     "values": {"arange": {"start": -5, "step": 3}}, "layout": {"slice": {"dim": 1, "step": 2}}}},
    "e": {"tensor": {"dtype": "bool", "shape": [5], "values": {"bernoulli": 0.2}}},
    "f": {"tensor": {"dtype": "bfloat16", "shape": [3], "values": {"choice": [1.5, -2]}, "memory": "cuda:0"}},
    "g": {"npy": "npy/float32.npy"},
    "h": {"pt": {"file": "pt/list.pt", "memory": "pageable"}},
    "i": {"value": {"x": [1, "y"]}}
  }}})";

// Values a mutation may put anywhere: boundary numbers, wrong types, plausible node parts.
const std::vector<Json>& replacements() {
  static const std::vector<Json> values = [] {
    std::vector<Json> v;
    for (const char* text : {"-1",
                             "0",
                             "1",
                             "3",
                             "1e300",
                             "-1e300",
                             "9223372036854775807",
                             "18446744073709551615",
                             "0.5",
                             "\"\"",
                             "\"N\"",
                             "\"K\"",
                             "\"float32\"",
                             "\"cuda:9\"",
                             "\"pinned\"",
                             "null",
                             "true",
                             "[]",
                             "{}",
                             "[1, 2]",
                             "[5, 1]",
                             "[[[[[]]]]]",
                             "{\"uniform\": [5, 1]}",
                             "{\"uniform\": [0, 1000000000]}",
                             "{\"choice\": []}",
                             "{\"param\": \"n\"}",
                             "{\"param\": \"zz\"}",
                             "{\"ref\": \"leaf\"}",
                             "{\"ref\": \"nope\"}",
                             "{\"list\": {\"repeat\": 1000000, \"item\": {\"ref\": \"leaf\"}}}",
                             "{\"tensor\": {\"dtype\": \"float64\", \"shape\": [100000, 100000]}}",
                             "{\"let\": {\"K\": 2}, \"in\": {\"ref\": \"leaf\"}}",
                             "{\"npy\": \"npy/big_endian.npy\"}",
                             "{\"pt\": \"pt/corrupt.pt\"}",
                             "{\"npy\": \"pt/batch.pt\"}",
                             "{\"cycle\": [{\"ref\": \"leaf\"}]}"}) {
      v.push_back(Json::parse(text));
    }
    return v;
  }();
  return values;
}

void collect(Json& value, std::vector<Json*>& out) {
  out.push_back(&value);
  if (value.is_object() || value.is_array()) {
    for (auto& child : value) collect(child, out);
  }
}

std::string mutate_structure(const std::string& text, Rng& rng) {
  Json doc = Json::parse(text);
  const int edits = static_cast<int>(uniform_int(rng, 1, 3));
  for (int e = 0; e < edits; ++e) {
    std::vector<Json*> nodes;
    collect(doc, nodes);
    Json& target =
        *nodes[static_cast<size_t>(uniform_int(rng, 0, static_cast<int64_t>(nodes.size()) - 1))];
    switch (uniform_int(rng, 0, 3)) {
      case 0:
        target = replacements()[static_cast<size_t>(
            uniform_int(rng, 0, static_cast<int64_t>(replacements().size()) - 1))];
        break;
      case 1:  // drop a member or element
        if (target.is_object() && !target.empty()) {
          auto it = target.begin();
          std::advance(it, uniform_int(rng, 0, static_cast<int64_t>(target.size()) - 1));
          target.erase(it.key());
        } else if (target.is_array() && !target.empty()) {
          target.erase(
              static_cast<size_t>(uniform_int(rng, 0, static_cast<int64_t>(target.size()) - 1)));
        }
        break;
      case 2:  // add a member or element, sometimes a copy of another subtree
        if (target.is_object()) {
          target[uniform_int(rng, 0, 1) ? "extra" : "item"] = *nodes[static_cast<size_t>(
              uniform_int(rng, 0, static_cast<int64_t>(nodes.size()) - 1))];
        } else if (target.is_array()) {
          target.push_back(replacements()[static_cast<size_t>(
              uniform_int(rng, 0, static_cast<int64_t>(replacements().size()) - 1))]);
        }
        break;
      default:  // numbers drift
        if (target.is_number())
          target = target.get<double>() * static_cast<double>(uniform_int(rng, -3, 3));
        break;
    }
  }
  return doc.dump();
}

std::string mutate_bytes(std::string text, Rng& rng) {
  const int edits = static_cast<int>(uniform_int(rng, 1, 4));
  static const std::string alphabet = "{}[]\":,-0123456789eE.nulltruefalse \\\x80\xff";
  for (int e = 0; e < edits && !text.empty(); ++e) {
    const auto at = static_cast<size_t>(uniform_int(rng, 0, static_cast<int64_t>(text.size()) - 1));
    const char c = alphabet[static_cast<size_t>(
        uniform_int(rng, 0, static_cast<int64_t>(alphabet.size()) - 1))];
    switch (uniform_int(rng, 0, 3)) {
      case 0:
        text[at] = c;
        break;
      case 1:
        text.insert(at, 1, c);
        break;
      case 2:
        text.erase(at, static_cast<size_t>(uniform_int(rng, 1, 8)));
        break;
      default:
        text = text.substr(0, at);
        break;
    }
  }
  return text;
}

TEST(Fuzz, EveryMutationParsesOrThrowsConfigError) {
  const std::vector<std::string> seeds{read(testing::configs_dir() / "streampetr.json"),
                                       read(testing::configs_dir() / "mixed-deep.json"),
                                       kEverything};
  const std::string file = testing::fixture("fuzz.json");  // relative paths resolve in fixtures/
  BuildOptions options;
  options.max_bytes = 2 << 20;  // small: filling values is most of the time of a build
  options.max_nodes = 20000;
  Rng rng(2024, 0);
  const auto start = Clock::now();
  int parsed = 0;
  int built = 0;
  int iterations = 0;
  for (; iterations < kIterations && Clock::now() - start < kBudget; ++iterations) {
    const std::string& seed = seeds[static_cast<size_t>(iterations) % seeds.size()];
    const std::string input =
        uniform_int(rng, 0, 1) ? mutate_structure(seed, rng) : mutate_bytes(seed, rng);
    const auto began = Clock::now();
    try {
      const Config config = parse_config(input, file);
      ++parsed;
      BuildInfo info;
      const c10::IValue data = build_workload(config, options, &info);
      (void)summarize_workload(data, info);
      ++built;
    } catch (const ConfigError&) {
      // The expected outcome for most mutations.
    } catch (const std::exception& e) {
      FAIL() << "unexpected " << typeid(e).name() << ": " << e.what() << "\ninput:\n" << input;
    }
    ASSERT_LT(Clock::now() - began, kSlowInput) << "slow input:\n" << input;
  }
  // The mutations must reach the builder, not only the JSON parser.
  EXPECT_GT(parsed, iterations / 20);
  EXPECT_GT(built, iterations / 40);
  RecordProperty("iterations", iterations);
  RecordProperty("parsed", parsed);
  RecordProperty("built", built);
}

}  // namespace
}  // namespace mtc::bench
