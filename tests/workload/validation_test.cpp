// Every class of invalid input gives a ConfigError with the file, the JSON pointer of the
// offending value and a message that says what is wrong.
#include <gtest/gtest.h>

#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.h"
#include "workload/config.h"

namespace mtc::bench {
namespace {

using testing::config_from_text;
using testing::expect_config_error;

struct Case {
  const char* name;
  const char* json;
  const char* path;
  const char* message;
};

// Small wrappers keep the table readable: most cases are one tensor or one node.
std::string tensor(const std::string& body) { return R"({"structure": {"tensor": )" + body + "}}"; }

class InvalidConfig : public ::testing::TestWithParam<Case> {};

TEST_P(InvalidConfig, FailsWithPathAndMessage) {
  const Case& c = GetParam();
  expect_config_error([&] { config_from_text(c.json); }, c.path, c.message);
}

const std::vector<Case>& cases() {
  static const std::vector<Case> table = [] {
    std::vector<Case> t;
    auto add = [&](const char* name, std::string json, const char* path, const char* message) {
      static std::deque<std::string> storage;  // stable addresses: the table points into it
      storage.push_back(std::move(json));
      t.push_back({name, storage.back().c_str(), path, message});
    };
    // Malformed documents.
    add("InvalidJson", R"({"structure": [1, 2,]})", "", "invalid JSON: parse error at line 1");
    add("RootNotObject", R"([1, 2])", "", "a config is a JSON object, got an array");
    add("TooDeep", std::string(300, '[') + std::string(300, ']'), "", "nested deeper than 256");
    add("NoWorkload", R"({"name": "x"})", "", "exactly one of \"structure\"");
    add("StructureAndInput", R"({"structure": 1, "input": "pt/list.pt"})", "", "exactly one of");
    // Unknown keys, with a suggestion where one is close.
    add("UnknownTopLevelKey", R"({"structure": 1, "strcture": 2})", "/strcture",
        "unknown key 'strcture' (did you mean 'structure'?)");
    add("UnknownBenchKey", R"({"structure": 1, "bench": {"warmpu": 3}})", "/bench/warmpu",
        "unknown key 'warmpu' (did you mean 'warmup'?)");
    add("UnknownTensorKey", tensor(R"({"dtype": "int8", "shape": [], "dtpye": 1})"),
        "/structure/tensor/dtpye", "unknown key 'dtpye'");
    add("UnknownNodeKind", R"({"structure": {"lst": []}})", "/structure/lst",
        "unknown key 'lst' (did you mean 'list'?)");
    add("TwoNodeKinds", R"({"structure": {"list": [], "dict": {}}})", "/structure",
        "a node has one kind; got list, dict");
    add("ExtraKeyBesideKind", R"({"structure": {"list": [], "repeat": 3}})", "/structure/repeat",
        "unknown key 'repeat'");
    add("UnknownDistribution", tensor(R"({"dtype": "int8", "shape": [{"unifrom": [1, 2]}]})"),
        "/structure/tensor/shape/0/unifrom", "did you mean 'uniform'?");
    // Wrong types.
    add("SeedNotInteger", R"({"structure": 1, "seed": "42"})", "/seed",
        "expected an integer, got a string");
    add("SeedNegative", R"({"structure": 1, "seed": -1})", "/seed", "must be >= 0, got -1");
    add("SeedFraction", R"({"structure": 1, "seed": 1.5})", "/seed",
        "expected an integer, got 1.5");
    add("NameNotString", R"({"structure": 1, "name": 3})", "/name",
        "expected a string, got an integer");
    add("RawSamplesNotBool", R"({"structure": 1, "bench": {"raw_samples": 1}})",
        "/bench/raw_samples", "expected true or false");
    add("BenchNotObject", R"({"structure": 1, "bench": []})", "/bench",
        "expected an object, got an array");
    add("RepeatNotCount", R"({"structure": {"list": {"repeat": [3], "item": 1}}})",
        "/structure/list/repeat", "expected a count");
    add("BareArrayNode", R"({"structure": [1, 2]})", "/structure", "a bare array is not a node");
    add("ShapeNotArray", tensor(R"({"dtype": "int8", "shape": 3})"), "/structure/tensor/shape",
        "expected an array");
    add("MissingDtype", tensor(R"({"shape": [1]})"), "/structure/tensor",
        "missing required key 'dtype'");
    // Unknown dtypes and other names.
    add("UnknownDtype", tensor(R"({"dtype": "float", "shape": [1]})"), "/structure/tensor/dtype",
        "unknown dtype 'float'");
    add("UnknownDtypeSuggestion", tensor(R"({"dtype": "flaot32", "shape": [1]})"),
        "/structure/tensor/dtype", "did you mean 'float32'?");
    add("UnknownMemory", tensor(R"({"dtype": "int8", "shape": [1], "memory": "cuda"})"),
        "/structure/tensor/memory", "unknown memory kind 'cuda'");
    add("UnknownDirection", R"({"structure": 1, "directions": ["h2d", "up"]})", "/directions/1",
        "unknown direction 'up'");
    add("DuplicateDirection", R"({"structure": 1, "directions": ["h2d", "h2d"]})", "/directions/1",
        "duplicate");
    add("NoDirections", R"({"structure": 1, "directions": []})", "/directions",
        "at least one direction");
    add("UnknownLayout", tensor(R"({"dtype": "int8", "shape": [2, 2], "layout": "transposed"})"),
        "/structure/tensor/layout", "unknown layout 'transposed'");
    // Negative and impossible sizes.
    add("NegativeSize", tensor(R"({"dtype": "int8", "shape": [4, -3]})"),
        "/structure/tensor/shape/1", "must be >= 0, got -3");
    add("NegativeRepeat", R"({"structure": {"list": {"repeat": -1, "item": 1}}})",
        "/structure/list/repeat", "must be >= 0, got -1");
    add("NegativeUniformBound", tensor(R"({"dtype": "int8", "shape": [{"uniform": [-2, 3]}]})"),
        "/structure/tensor/shape/0/uniform/0", "must be >= 0, got -2");
    add("ImpossibleSize",
        tensor(R"({"dtype": "float64", "shape": [1099511627776, 1099511627776]})"),
        "/structure/tensor/shape", "impossible size");
    add("ImpossibleSlicedSize", tensor(R"({"dtype": "float32", "shape": [1073741824, 64],
        "layout": {"slice": {"dim": 0, "step": 1024}}})"),
        "/structure/tensor/shape", "impossible size");
    add("EmptyButItsStridesOverflow",
        tensor(R"({"dtype": "float32", "shape": [0, 4294967296, 4294967296]})"),
        "/structure/tensor/shape", "multiply past 2^63");
    add("TooManyDims", tensor(R"({"dtype": "int8", "shape": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]})"),
        "/structure/tensor/shape", "at most 16");
    add("HugeInteger", tensor(R"({"dtype": "int8", "shape": [18446744073709551615]})"),
        "/structure/tensor/shape/0", "out of range");
    // Empty choice lists.
    add("EmptyCountChoice", tensor(R"({"dtype": "int8", "shape": [{"choice": []}]})"),
        "/structure/tensor/shape/0/choice", "the choice list is empty");
    add("EmptyValueChoice", tensor(R"({"dtype": "int8", "shape": [2], "values": {"choice": []}})"),
        "/structure/tensor/values/choice", "the choice list is empty");
    add("EmptyCycle", R"({"structure": {"cycle": []}})", "/structure/cycle",
        "the list of options is empty");
    add("EmptyChoose", R"({"structure": {"choose": []}})", "/structure/choose",
        "the list of options is empty");
    // Bad ranges.
    add("CountRangeReversed", tensor(R"({"dtype": "int8", "shape": [{"uniform": [5, 3]}]})"),
        "/structure/tensor/shape/0/uniform", "empty range: lo 5 > hi 3");
    add("ValueRangeReversed",
        tensor(R"({"dtype": "float32", "shape": [2], "values": {"uniform": [1.5, 0.5]}})"),
        "/structure/tensor/values/uniform", "empty range: lo 1.5 > hi 0.5");
    add("NormalClampReversed",
        tensor(
            R"({"dtype": "int8", "shape": [{"normal": {"mean": 3, "std": 1, "min": 9, "max": 2}}]})"),
        "/structure/tensor/shape/0/normal", "empty range: min 9 > max 2");
    add("NegativeStd",
        tensor(
            R"({"dtype": "float32", "shape": [2], "values": {"normal": {"mean": 0, "std": -1}}})"),
        "/structure/tensor/values/normal/std", "must be >= 0");
    add("ValueOutsideDtype",
        tensor(R"({"dtype": "uint8", "shape": [2], "values": {"uniform": [0, 300]}})"),
        "/structure/tensor/values/uniform/1", "out of range [0, 255]");
    add("BernoulliAboveOne",
        tensor(R"({"dtype": "bool", "shape": [2], "values": {"bernoulli": 1.5}})"),
        "/structure/tensor/values/bernoulli", "out of range");
    add("PoissonNegativeMean", tensor(R"({"dtype": "int8", "shape": [{"poisson": {"mean": -1}}]})"),
        "/structure/tensor/shape/0/poisson/mean", "must be >= 0");
    add("UniformNotPair", tensor(R"({"dtype": "int8", "shape": [{"uniform": [1, 2, 3]}]})"),
        "/structure/tensor/shape/0/uniform", "expected [lo, hi]");
    add("ZeroWeights", R"({"structure": {"choose": [1, 2], "weights": [0, 0]}})",
        "/structure/weights", "positive, finite sum");
    add("WeightsCount", R"({"structure": {"choose": [1, 2], "weights": [1]}})",
        "/structure/weights", "1 weights for 2 options");
    add("TransposeSameDim",
        tensor(R"({"dtype": "int8", "shape": [2, 2], "layout": {"transpose": [1, -1]}})"),
        "/structure/tensor/layout/transpose", "the two dimensions are the same");
    add("TransposeDimOutOfRange",
        tensor(R"({"dtype": "int8", "shape": [2, 2], "layout": {"transpose": [0, 2]}})"),
        "/structure/tensor/layout/transpose/1", "out of range [-2, 1]");
    add("SliceStepZero",
        tensor(R"({"dtype": "int8", "shape": [2], "layout": {"slice": {"dim": 0, "step": 0}}})"),
        "/structure/tensor/layout/slice/step", "out of range");
    add("TimeoutZero", R"({"structure": 1, "bench": {"timeout_s": 0}})", "/bench/timeout_s",
        "must be > 0");
    add("MinSamplesZero", R"({"structure": 1, "bench": {"min_samples": 0}})", "/bench/min_samples",
        "out of range");
    add("DuplicateStrategy", R"({"structure": 1, "bench": {"strategies": ["a", "a"]}})",
        "/bench/strategies/1", "duplicate entry a");
    add("UnknownPattern", R"({"structure": 1, "bench": {"patterns": ["warm"]}})",
        "/bench/patterns/0", "unknown pattern warm (known: hot, step, step-busy)");
    add("NoPattern", R"({"structure": 1, "bench": {"patterns": []}})", "/bench/patterns",
        "at least one pattern");
    add("InputsZero", R"({"structure": 1, "bench": {"inputs": 0}})", "/bench/inputs", "1");
    add("MaxRoundsBelowMin", R"({"structure": 1, "bench": {"min_rounds": 6, "max_rounds": 3}})",
        "/bench/max_rounds", "max_rounds (3) is below min_rounds (6)");
    // Symbols, definitions and parameters.
    add("UnboundSymbol", tensor(R"({"dtype": "int8", "shape": ["N"]})"),
        "/structure/tensor/shape/0", "unknown symbol 'N'");
    add("UnboundSymbolInDefinition",
        R"({"defs": {"cam": {"tensor": {"dtype": "int8", "shape": ["N"]}}},
        "structure": {"list": [{"let": {"N": 2}, "in": {"ref": "cam"}}, {"ref": "cam"}]}})",
        "/defs/cam/tensor/shape/0", "unknown symbol 'N'");
    add("BadSymbolName", R"({"structure": {"let": {"2x": 1}, "in": 1}})", "/structure/let/2x",
        "not a symbol name");
    add("ForLengthsDiffer",
        R"({"structure": {"list": {"for": {"A": [1, 2], "B": [1]}, "item": 1}}})",
        "/structure/list/for/B", "1 values, but 'A' has 2");
    add("RepeatAndFor", R"({"structure": {"list": {"repeat": 2, "for": {"A": [1]}, "item": 1}}})",
        "/structure/list", "exactly one of \"repeat\"");
    add("UnknownDefinition", R"({"defs": {"camera": 1}, "structure": {"ref": "camra"}})",
        "/structure/ref", "unknown definition 'camra' (did you mean 'camera'?)");
    add("RecursiveDefinition",
        R"({"defs": {"a": {"list": [{"ref": "b"}]}, "b": {"ref": "a"}}, "structure": {"ref": "a"}})",
        "/defs/b/ref", "refers to itself (a -> b -> a)");
    add("BrokenUnusedDefinition",
        R"({"defs": {"unused": {"tensor": {"dtype": "int9", "shape": []}}}, "structure": 1})",
        "/defs/unused/tensor/dtype", "unknown dtype 'int9'");
    add("UnknownParam",
        R"({"params": {"n": 1}, "structure": {"list": {"repeat": {"param": "m"}, "item": 1}}})",
        "/structure/list/repeat/param", "unknown parameter 'm'");
    add("ParamOfWrongType",
        R"({"params": {"n": "a lot"}, "structure": {"list": {"repeat": {"param": "n"}, "item": 1}}})",
        "/structure/list/repeat", "'a lot' is not a symbol name");
    add("BadParamName", R"({"params": {"a-b": 1}, "structure": 1})", "/params/a-b",
        "not a parameter name");
    // Files: missing, not what they claim, unsupported content.
    add("MissingNpy", R"({"structure": {"npy": "npy/missing.npy"}})", "/structure/npy",
        "no such file");
    add("MissingPtInput", R"({"input": "pt/missing.pt"})", "/input", "no such file");
    add("NotNpy", R"({"structure": {"npy": "npy/not_npy.npy"}})", "/structure/npy",
        "not a .npy file");
    add("NpyBadHeader", R"({"structure": {"npy": {"file": "npy/bad_header.npy"}}})",
        "/structure/npy/file", "bad .npy header");
    add("NpyTruncated", R"({"structure": {"npy": "npy/truncated.npy"}})", "/structure/npy",
        "holds 54 bytes of data");
    add("NpyTrailingBytes", R"({"structure": {"npy": "npy/trailing.npy"}})", "/structure/npy",
        "holds 28 bytes");
    add("NpyUnsupportedDtype", R"({"structure": {"npy": "npy/uint16.npy"}})", "/structure/npy",
        "unsupported dtype '<u2'");
    add("NpyObjectDtype", R"({"structure": {"npy": "npy/object.npy"}})", "/structure/npy",
        "unsupported dtype '|O'");
    add("NpyStructured", R"({"structure": {"npy": "npy/structured.npy"}})", "/structure/npy",
        "structured dtypes");
    add("NpyBigEndian", R"({"structure": {"npy": "npy/big_endian.npy"}})", "/structure/npy",
        "big-endian data ('>f4')");
    add("NotPt", R"({"structure": {"pt": "pt/not_pt.pt"}})", "/structure/pt",
        "not a torch.save file");
    add("PtCorrupt", R"({"input": "pt/corrupt.pt"})", "/input", "not a readable torch.save file");
    add("PtLegacy", R"({"input": {"file": "pt/legacy.pt"}})", "/input/file",
        "legacy (non-zip) torch.save format");
    add("PtIsNpy", R"({"input": "npy/float32.npy"})", "/input", "not a torch.save file");
    add("InputNotString", R"({"input": 3})", "/input", "expected a file name");
    add("DefsWithInput", R"({"input": "pt/list.pt", "defs": {}})", "/defs",
        "belongs with \"structure\"");
    return t;
  }();
  return table;
}

INSTANTIATE_TEST_SUITE_P(Errors, InvalidConfig, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return std::string(param.param.name);
                         });

TEST(ConfigErrorContext, NamesTheConfigFileAndTheDataFile) {
  try {
    config_from_text(R"({"structure": {"npy": "npy/big_endian.npy"}})");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), (testing::fixtures_dir() / "test.json").string());
    const std::string what = e.what();
    EXPECT_NE(what.find("test.json: /structure/npy: "), std::string::npos) << what;
    EXPECT_NE(what.find("big_endian.npy"), std::string::npos) << what;
  }
}

TEST(ConfigErrorContext, MissingConfigFile) {
  expect_config_error([] { load_config("/nonexistent/dir/config.json"); }, "", "no such file");
  expect_config_error([] { load_config(testing::fixtures_dir().string()); }, "", "is a directory");
}

TEST(ConfigErrorContext, SetErrors) {
  const std::string text = R"({"params": {"samples": 4}, "structure": 1})";
  expect_config_error([&] { config_from_text(text, {"samples"}); }, "", "expected NAME=VALUE");
  expect_config_error([&] { config_from_text(text, {"=3"}); }, "", "expected NAME=VALUE");
  expect_config_error([&] { config_from_text(text, {"sample=3"}); }, "/params/sample",
                      "unknown parameter 'sample' (did you mean 'samples'?)");
  expect_config_error([&] { config_from_text(text, {"/bench/warmup=-1"}); }, "/bench/warmup",
                      "must be >= 0");
  expect_config_error([&] { config_from_text(text, {"/bench/nonsense=1"}); }, "/bench/nonsense",
                      "unknown key");
  expect_config_error([&] { config_from_text(text, {"/structure/x~2=1"}); }, "/structure/x~2",
                      "cannot set");
}

// A --set pointer makes the objects it names: its tokens count as levels with its value's, as
// the config's own nesting does (the walks of the config recurse once per level).
TEST(ConfigErrorContext, ASetCannotNestDeeperThanAConfig) {
  const std::string text = R"({"params": {"samples": 4}, "structure": 1})";
  std::string pointer = "/defs";
  for (int i = 0; i < 300; ++i) pointer += "/x";
  expect_config_error([&] { config_from_text(text, {pointer + "=1"}); }, pointer,
                      "nested deeper than 256");
  expect_config_error(
      [&] { config_from_text(text, {"samples=" + std::string(255, '[') + std::string(255, ']')}); },
      "/params/samples", "nested deeper than 256");
  // At the bound: 256 tokens and a scalar are 256 levels; a list there is one more.
  std::string fits = "/defs/d/value";  // a literal: any JSON
  for (int i = 0; i < 253; ++i) fits += "/x";
  EXPECT_NO_THROW(config_from_text(text, {fits + "=1"}));
  expect_config_error([&] { config_from_text(text, {fits + "=[]"}); }, fits,
                      "nested deeper than 256");
}

// An index past an array's end would have nlohmann fill the array with nulls up to it.
TEST(ConfigErrorContext, ASetIndexMayNameAnElementOrTheEndOnly) {
  const std::string text = R"({"directions": ["h2d", "d2h"], "structure": 1})";
  expect_config_error([&] { config_from_text(text, {"/directions/1000000000000=1"}); },
                      "/directions/1000000000000",
                      "index 1000000000000 is past the end of an array of 2");
  expect_config_error([&] { config_from_text(text, {"/directions/3=\"h2h\""}); }, "/directions/3",
                      "past the end");
  EXPECT_EQ(config_from_text(text, {"/directions/1=\"h2h\""}).directions,
            (std::vector<std::string>{"h2d", "h2h"}));
  EXPECT_EQ(config_from_text(text, {"/directions/2=\"h2h\""}).directions.size(), 3u);
  EXPECT_EQ(config_from_text(text, {"/directions/-=\"h2h\""}).directions.size(), 3u);
  // Through a key the pointer escapes ("a/b" is a~1b).
  const std::string escaped = R"({"defs": {"d": {"value": {"a/b": [1, 2]}}}, "structure": 1})";
  expect_config_error([&] { config_from_text(escaped, {"/defs/d/value/a~1b/1000000000=1"}); },
                      "/defs/d/value/a~1b/1000000000", "past the end of an array of 2");
  EXPECT_NO_THROW(config_from_text(escaped, {"/defs/d/value/a~1b/2=3"}));
}

// A parameter's value counts the levels above the place it is put in.
TEST(ConfigErrorContext, AParameterCannotNestDeeperThanAConfig) {
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  std::string place = R"({"param": "p"})";
  std::string path = "/structure";
  for (int i = 0; i < 100; ++i) {
    place = R"({"value": [)" + place + "]}";
    path += "/value/0";
  }
  expect_config_error(
      [&] {
        config_from_text(R"({"params": {"p": )" + deep + R"(}, "structure": )" + place + "}");
      },
      path, "nested deeper than 256 levels once parameter 'p' is put here");
}

// Names longer than anyone types are not compared for a suggestion (the comparison costs the
// product of the lengths); the error stays.
TEST(ConfigErrorContext, ALongUnknownNameGetsNoSuggestion) {
  const std::string defined(99, 'a');
  const std::string given(100, 'a');
  try {
    config_from_text(R"({"defs": {")" + defined + R"(": 1}, "structure": {"ref": ")" + given +
                     R"("}})");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown definition"), std::string::npos) << what;
    EXPECT_EQ(what.find("did you mean"), std::string::npos) << what;
  }
}

// A long value quoted in a message is cut short at a whole character: the message must stay valid
// UTF-8, as JSON outputs and terminals expect (half a character made a JSON writer throw).
TEST(ConfigErrorContext, ALongNonAsciiValueIsCutAtAWholeCharacter) {
  std::string value = "x";
  for (int i = 0; i < 40; ++i) value += "\u00e9";  // two bytes each
  try {
    config_from_text(tensor(R"({"dtype": "int8", "shape": [{"uniform": ")" + value + R"("}]})"));
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("expected [lo, hi], got \"x\u00e9"), std::string::npos) << what;
    EXPECT_NE(what.find("\u00e9..."), std::string::npos) << what;
    EXPECT_NO_THROW((void)nlohmann::json(what).dump()) << "not valid UTF-8: " << what;
  }
}

}  // namespace
}  // namespace mtc::bench
