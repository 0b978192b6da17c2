// The bad-input catalogue (tests/README.md), through the whole program: each kind of bad file
// or argument gives exit code 2 and an error whose first line names the place and the reason.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "temp_dir.h"

namespace mtc::bench {
namespace {

using testing_support::TempDir;

struct Ran {
  int code;
  std::string first_error_line;
};

Ran run(const std::vector<std::string>& args) {
  const testing_support::Ran r = testing_support::run(args);
  return {r.code, r.err.substr(0, r.err.find('\n'))};
}

class BadInput : public testing::Test {
 protected:
  // Exit code 2 and a first error line holding each of `parts`.
  void expect_rejected(const std::vector<std::string>& args,
                       const std::vector<std::string>& parts) {
    const Ran r = run(args);
    EXPECT_EQ(r.code, 2) << testing::PrintToString(args) << ": " << r.first_error_line;
    for (const std::string& part : parts) {
      EXPECT_NE(r.first_error_line.find(part), std::string::npos)
          << testing::PrintToString(args) << "\nexpected: " << part
          << "\ngot: " << r.first_error_line;
    }
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  static std::string config_with(const std::string& structure) {
    return R"({"name": "t", "bench": {"warmup": 0, "min_samples": 1, "min_time_s": 0, "timeout_s": 1},
               "structure": )" +
           structure + "}";
  }
  TempDir dir_;
};

TEST_F(BadInput, ConfigFilesThatCannotBeRead) {
  expect_rejected({"--config", dir_ / "missing.json"}, {"missing.json", "no such file"});
  expect_rejected({"--config", dir_.make_dir("folder.json")}, {"folder.json", "is a directory"});
  expect_rejected({"--config", "/dev/null"}, {"/dev/null", "not a regular file"});
  if (geteuid() != 0) {  // root reads anything
    const std::string locked = write("locked.json", config_with("1"));
    chmod(locked.c_str(), 0);
    expect_rejected({"--config", locked}, {"locked.json", "permission denied"});
  }
  // Larger than any config: refused before it is read (a sparse file, no disk used).
  const std::string huge = dir_ / "huge.json";
  std::ofstream(huge).close();
  ASSERT_EQ(truncate(huge.c_str(), off_t{64} << 20), 0);
  expect_rejected({"--config", huge}, {"huge.json", "too large for a config"});
}

TEST_F(BadInput, ConfigTextThatIsNotAConfig) {
  expect_rejected({"--config", write("empty.json", "")}, {"empty.json", "invalid JSON"});
  expect_rejected({"--config", write("blank.json", " \n\t\n")}, {"blank.json", "invalid JSON"});
  // A NUL byte ends nlohmann's input: "unexpected end of input" called the file cut short.
  expect_rejected({"--config", write("nul.json", std::string("{\n \"name\": \"a\0b\"}", 18))},
                  {"nul.json", "a NUL byte at line 2, column 12: not a text file"});
  // Not UTF-8: a Latin-1 byte inside a string, and a stray byte outside any.
  expect_rejected({"--config", write("latin1.json", "{\"name\": \"caf\xe9\", \"structure\": 1}")},
                  {"latin1.json", "invalid JSON"});
  expect_rejected({"--config", write("binary.json", "\xff\xfe{}")},
                  {"binary.json", "invalid JSON"});
  // Nesting far beyond the limit is refused before it is parsed (no deep recursion anywhere).
  expect_rejected(
      {"--config", write("deep.json", std::string(100000, '[') + std::string(100000, ']'))},
      {"deep.json", "nested deeper than"});
}

TEST_F(BadInput, NumbersOutOfRange) {
  expect_rejected({"--config", write("big-seed.json", R"({"seed": 1e999, "structure": 1})")},
                  {"big-seed.json"});
  expect_rejected(
      {"--config",
       write("big-dim.json", config_with(R"({"tensor": {"dtype": "int8", "shape": [1e30]}})"))},
      {"big-dim.json", "/structure/tensor/shape/0"});
  expect_rejected(
      {"--config",
       write("neg-dim.json", config_with(R"({"tensor": {"dtype": "int8", "shape": [-4]}})"))},
      {"neg-dim.json", "/structure/tensor/shape/0"});
  expect_rejected(
      {"--config",
       write("size.json",
             config_with(R"({"tensor": {"dtype": "float64", "shape": [65536, 65536, 65536]}})"))},
      {"size.json", "impossible size"});
  const std::string ok =
      write("ok.json", config_with(R"({"tensor": {"dtype": "int8", "shape": [2]}})"));
  expect_rejected({"--config", ok, "--set", "/bench/warmup=-3"}, {"/bench/warmup", "must be >= 0"});
  expect_rejected({"--config", ok, "--set", "/bench/timeout_s=1e400"}, {"/bench/timeout_s"});
}

// Terabytes of tensors in a few lines: `validate --no-build` counts them without building and
// refuses, as a run would before allocating (it passed, and the run's build exhausted memory).
TEST_F(BadInput, WorkloadsLargerThanTheMachineFailWithoutBuilding) {
  const std::string huge = write(
      "huge.json", config_with(R"({"list": {"repeat": 4096, "item": {"tensor": {"dtype": "float64",
                                                                 "shape": [1000000000]}}}})"));
  expect_rejected({"validate", "--no-build", huge},
                  {"invalid: " + huge + ": /structure/list/item: the workload needs more than"});
  expect_rejected({"--config", huge}, {huge, "/structure/list/item", "the workload needs more"});
}

// `validate` read each file before the checks a run's --config makes: a named pipe hung it, a
// folder ended it with exit 3 before the next file was looked at, and a file over the limit was
// read whole first. Each is now one line of "invalid", and the files after it are still checked.
// A file is either ok or invalid: "ok" came before the workload's totals were checked.
TEST_F(BadInput, ValidateChecksEachFileAsARunWouldAndCallsItOkOrInvalid) {
  const std::string pipe = dir_ / "pipe.json";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0644), 0);
  const std::string folder = dir_.make_dir("folder.json");
  const std::string ok =
      write("ok.json", config_with(R"({"tensor": {"dtype": "int8", "shape": [2]}})"));
  const testing_support::Ran r = testing_support::run({"validate", pipe, folder, ok});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("invalid: " + pipe + ": cannot open: not a regular file"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("invalid: " + folder + ": cannot open: it is a directory"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("ok: " + ok), std::string::npos) << r.out;
  const std::string huge = write(
      "huge.json", config_with(R"({"list": {"repeat": 4096, "item": {"tensor": {"dtype": "float64",
                                                                 "shape": [1000000000]}}}})"));
  const testing_support::Ran too_big = testing_support::run({"validate", "--no-build", huge});
  EXPECT_EQ(too_big.code, 2);
  EXPECT_EQ(too_big.out.find("ok: "), std::string::npos) << "ok and invalid both:\n" << too_big.out;
}

TEST_F(BadInput, InputBatchesThatAreNotBatches) {
  expect_rejected({"--input", dir_ / "missing.pt"}, {"missing.pt", "no such file"});
  expect_rejected({"--input", dir_.make_dir("folder.pt")}, {"folder.pt", "is a directory"});
  expect_rejected({"--input", write("empty.pt", "")}, {"empty.pt", "not a torch.save file"});
  expect_rejected({"--input", write("text.pt", "hello")}, {"text.pt", "not a torch.save file"});
  expect_rejected(
      {"--input", write("zip.pt", std::string("PK\x03\x04", 4) + std::string(100, '\0'))},
      {"zip.pt", "not a readable torch.save file"});
}

TEST_F(BadInput, ReportPathsThatCannotBeWrittenFailBeforeMeasuring) {
  const std::string ok =
      write("ok.json", config_with(R"({"tensor": {"dtype": "int8", "shape": [2]}})"));
  expect_rejected({"--config", ok, "--json", dir_ / "no/such/folder/r.json"},
                  {"r.json", "No such file or directory"});
  expect_rejected({"--config", ok, "--md", dir_.make_dir("r.md")}, {"r.md", "it is a folder"});
}

// A request the machine or the plan cannot honour is refused, not quietly changed: --round-cpus
// past the process's CPUs confined nothing yet was reported as used.
TEST_F(BadInput, RoundCpusBeyondTheMachineAreRefused) {
  const std::string ok =
      write("ok.json", config_with(R"({"tensor": {"dtype": "int8", "shape": [2]}})"));
  expect_rejected({"--config", ok, "--round-cpus", "4096"},
                  {"--round-cpus 4096: this process may run on", "only"});
}

// The rename that puts a report in place would replace a named pipe, a device or a symbolic
// link (not its target) with a plain file; each is refused, naming the option, and left as it is.
TEST_F(BadInput, ReportPathsThatAreNotRegularFilesAreLeftAlone) {
  const std::string ok =
      write("ok.json", config_with(R"({"tensor": {"dtype": "int8", "shape": [2]}})"));
  const std::string pipe = dir_ / "pipe.json";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0644), 0);
  const std::string link = dir_ / "link.md";
  ASSERT_EQ(symlink(write("target.md", "kept").c_str(), link.c_str()), 0);
  expect_rejected({"--config", ok, "--json", pipe}, {"--json " + pipe, "it is a named pipe"});
  expect_rejected({"--config", ok, "--md", link}, {"--md " + link, "it is a symbolic link"});
  expect_rejected({"--config", ok, "--json", "/dev/null"}, {"--json /dev/null", "a device"});
  struct stat info {};
  ASSERT_EQ(lstat(pipe.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  ASSERT_EQ(lstat(link.c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
}

// An output on a file the run reads would destroy it (`-c X --json X` overwrote the config);
// two outputs on one file keep only the last. Spellings and links of one file are one file.
TEST_F(BadInput, OutputsThatNameAnInputOrEachOtherAreRefused) {
  const std::string config = config_with(R"({"tensor": {"dtype": "int8", "shape": [2]}})");
  const std::string ok = write("ok.json", config);
  expect_rejected({"--config", ok, "--json", ok}, {"--json " + ok, "the same file as --config"});
  expect_rejected({"--config", ok, "--md", dir_.make_dir("sub") + "/../ok.json"},
                  {"the same file as --config"});
  const std::string hard = dir_ / "hard.json";
  ASSERT_EQ(link(ok.c_str(), hard.c_str()), 0);
  expect_rejected({"--config", ok, "--json", hard}, {"the same file as --config"});
  expect_rejected({"--config", ok, "--json", dir_ / "r.out", "--md", dir_ / "./r.out"},
                  {"--md", "the same file as --json", "one output would replace the other"});
  std::stringstream kept;
  kept << std::ifstream(ok).rdbuf();
  EXPECT_EQ(kept.str(), config);
  EXPECT_FALSE(std::ifstream(dir_ / "r.out").good()) << "nothing was written";
}

// A data file the config reads (.npy here) is an input too, known once the config is loaded.
TEST_F(BadInput, AReportOverADataFileTheConfigReadsIsRefused) {
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  npy += static_cast<char>(header.size() & 0xff);
  npy += static_cast<char>(header.size() >> 8);
  npy += header + std::string("\x07\x09", 2);
  const std::string data = write("data.npy", npy);
  const std::string config = write("npy.json", config_with(R"({"npy": "data.npy"})"));
  expect_rejected({"--config", config, "--md", data},
                  {"--md " + data, "the same file as data file", "would destroy what is read"});
  std::stringstream kept;
  kept << std::ifstream(data, std::ios::binary).rdbuf();
  EXPECT_EQ(kept.str(), npy);
}

}  // namespace
}  // namespace mtc::bench
