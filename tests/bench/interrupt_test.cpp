// Ctrl-C during a run, on the real program: SIGINT stops it at the next sample, the reports are
// written whole and marked interrupted, and the exit code is 130.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "errors.h"
#include "temp_dir.h"

extern char** environ;

namespace mtc::bench {
namespace {

using testing_support::TempDir;
using Clock = std::chrono::steady_clock;

pid_t spawn(std::vector<std::string> args, const std::string& out_path,
            const std::string& err_path) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

// Whether `pid` has a handler for `signal` (its SigCgt mask in /proc), i.e. is past the point
// where the signal would still kill it.
bool catches(pid_t pid, int signal) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> (signal - 1)) & 1;
  }
  return false;
}

// Waits up to `limit` for the process to end; its wait status, or nullopt (then it is killed).
std::optional<int> wait_for(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  int status = 0;
  while (Clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return std::nullopt;
}

std::set<std::string> files_in(const std::string& folder) {
  std::set<std::string> names;
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.insert(name);
  }
  closedir(dir);
  return names;
}

std::string read_text(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

// A config whose run would measure for minutes with the rounds the tests ask for.
void write_long_config(const TempDir& dir) {
  std::ofstream(dir / "long.json") << R"({
    "name": "long", "seed": 1,
    "structure": {"list": {"repeat": 8, "item": {"tensor": {"dtype": "float32", "shape": [16]}}}}})";
}

// Starts mtc-bench with `args` after the program's name, its output in `dir`, and sends `signal`
// `times` times back to back half a second after its handler is in place; the wait status, or
// nullopt when it did not stop within 60 s.
std::optional<int> interrupted_run(const std::vector<std::string>& args, const TempDir& dir,
                                   int signal = SIGINT, int times = 1) {
  std::vector<std::string> argv{MTC_BENCH_EXE};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = spawn(argv, dir / "out.txt", dir / "err.txt");
  if (pid <= 0) {
    ADD_FAILURE() << "cannot start " << MTC_BENCH_EXE;
    return std::nullopt;
  }
  const auto start = Clock::now();
  while (!catches(pid, SIGINT) && Clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the measuring, usually
  for (int i = 0; i < times; ++i) {
    // A few milliseconds apart, so that the handler has seen the first (a pending signal sent
    // again is delivered once).
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(kill(pid, signal), 0);
  }
  return wait_for(pid, std::chrono::seconds(60));
}

TEST(Interrupt, SigintStopsTheRunAndWritesWholeReportsMarkedInterrupted) {
  const TempDir dir;
  // Without the signal this run would measure for minutes: each case's round lasts 30 s.
  write_long_config(dir);
  const std::optional<int> status = interrupted_run(
      {"--config",   dir / "long.json", "--quiet", "--direction",  "h2h",          "--strategy",
       "to,engine",  "--warmup",        "1",       "--round-time", "30",           "--min-time",
       "120",        "--timeout",       "120",     "--json",       dir / "r.json", "--md",
       dir / "r.md", "--processes",     "1"},
      dir);
  ASSERT_TRUE(status) << "mtc-bench did not stop within 60 s of SIGINT";
  ASSERT_TRUE(WIFEXITED(*status)) << "ended by signal " << WTERMSIG(*status) << '\n'
                                  << read_text(dir / "err.txt");
  EXPECT_EQ(WEXITSTATUS(*status), static_cast<int>(ExitCode::kInterrupted))
      << read_text(dir / "err.txt");
  EXPECT_NE(read_text(dir / "err.txt").find("interrupted"), std::string::npos);

  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(dir / "r.json"));
  EXPECT_EQ(doc["interrupted"], true);
  EXPECT_EQ(doc["exit_code"], 130);
  ASSERT_EQ(doc["runs"].size(), 1u);
  ASSERT_FALSE(doc["runs"][0]["results"].empty());
  for (const auto& result : doc["runs"][0]["results"]) {
    if (result["status"] == "ok") {
      EXPECT_GE(result["samples"].get<int64_t>(), 1) << result.dump();
    }
  }
  EXPECT_NE(read_text(dir / "r.md").find("Interrupted"), std::string::npos);
  // The reports were renamed into place: no temporary file is left beside them.
  EXPECT_EQ(files_in(dir.path()),
            (std::set<std::string>{"long.json", "r.json", "r.md", "out.txt", "err.txt"}));
}

// `timeout` signals its command and then the command's process group: the same request twice,
// microseconds apart. The run still ends as after one, with its reports (it died of the second
// before, writing nothing).
TEST(Interrupt, ASignalDeliveredTwiceAtOnceIsOneRequest) {
  for (const int signal : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(signal == SIGINT ? "SIGINT" : "SIGTERM");
    const TempDir dir;
    write_long_config(dir);
    const std::optional<int> status =
        interrupted_run({"--config", dir / "long.json", "--quiet", "--direction", "h2h",
                         "--strategy", "to", "--round-time", "30", "--min-time", "120", "--timeout",
                         "120", "--processes", "1", "--json", dir / "r.json"},
                        dir, signal, 2);
    ASSERT_TRUE(status) << "mtc-bench did not stop within 60 s of the signals";
    ASSERT_TRUE(WIFEXITED(*status)) << "ended by signal " << WTERMSIG(*status) << '\n'
                                    << read_text(dir / "err.txt");
    EXPECT_EQ(WEXITSTATUS(*status), static_cast<int>(ExitCode::kInterrupted));
    const nlohmann::json doc = nlohmann::json::parse(std::ifstream(dir / "r.json"));
    EXPECT_EQ(doc["interrupted"], true);
    for (const auto& result : doc["runs"][0]["results"]) {
      EXPECT_EQ(result["stop_reason"], "interrupted") << result.dump();
    }
  }
}

// The warm-up stops at the signal as the measuring does: a million copies of 20,000 tensors (the
// most --warmup takes; CPU->CPU `to` returns each leaf, so the walk is the cost) would keep the
// run for hours; it ignored the signal before.
TEST(Interrupt, SigintStopsTheWarmUp) {
  const TempDir dir;
  std::ofstream(dir / "large.json") << R"({
    "name": "large", "seed": 1,
    "structure": {"list": {"repeat": 20000, "item": {"tensor": {"dtype": "int8", "shape": [1]}}}}})";
  const std::optional<int> status =
      interrupted_run({"--config", dir / "large.json", "--quiet", "--direction", "h2h",
                       "--strategy", "to", "--pattern", "hot", "--warmup", "1000000",
                       "--round-time", "0.01", "--processes", "1", "--json", dir / "r.json"},
                      dir);
  ASSERT_TRUE(status) << "mtc-bench did not stop within 60 s of SIGINT in its warm-up";
  ASSERT_TRUE(WIFEXITED(*status)) << read_text(dir / "err.txt");
  EXPECT_EQ(WEXITSTATUS(*status), static_cast<int>(ExitCode::kInterrupted))
      << read_text(dir / "err.txt");
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(dir / "r.json"));
  EXPECT_EQ(doc["interrupted"], true);
  ASSERT_EQ(doc["runs"][0]["results"].size(), 1u);
  EXPECT_LT(doc["runs"][0]["results"][0]["warmup"].get<int64_t>(), 1'000'000)
      << "the report says how many warm-up copies ran";
}

// With several processes the parent passes the signal on to the child measuring. Sent at once,
// it may find that child still starting, before its handler is set up (it then dies of the
// signal and writes nothing), or measuring: either way the parent writes a whole report marked
// interrupted and exits with 130.
TEST(Interrupt, SigintDuringSeveralProcessesStillWritesAWholeReport) {
  const TempDir dir;
  write_long_config(dir);
  const pid_t pid = spawn({MTC_BENCH_EXE, "--config", dir / "long.json", "--quiet", "--direction",
                           "h2h", "--strategy", "to,engine", "--round-time", "30", "--min-time",
                           "120", "--timeout", "120", "--processes", "3", "--json", dir / "r.json"},
                          dir / "out.txt", dir / "err.txt");
  ASSERT_GT(pid, 0) << "cannot start " << MTC_BENCH_EXE;
  const auto start = Clock::now();
  while (!catches(pid, SIGINT) && Clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  while (read_text(dir / "err.txt").find("process 1/3") == std::string::npos &&
         Clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(kill(pid, SIGINT), 0);
  const std::optional<int> status = wait_for(pid, std::chrono::seconds(60));
  ASSERT_TRUE(status) << "mtc-bench did not stop within 60 s of SIGINT";
  ASSERT_TRUE(WIFEXITED(*status)) << "ended by signal " << WTERMSIG(*status);
  EXPECT_EQ(WEXITSTATUS(*status), static_cast<int>(ExitCode::kInterrupted))
      << read_text(dir / "err.txt");
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(dir / "r.json"));
  EXPECT_EQ(doc["interrupted"], true);
  EXPECT_LE(doc["runs"].size(), 1u);
}

// The processes whose parent is `parent` (from /proc/PID/stat: the field after the state).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const std::string& name : files_in("/proc")) {
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_text("/proc/" + name + "/stat");
    const size_t name_end = stat.rfind(')');  // the command's name may hold spaces
    if (name_end == std::string::npos) continue;
    std::istringstream rest(stat.substr(name_end + 1));
    std::string state;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == parent) children.push_back(std::stoi(name));
  }
  return children;
}

// Whether `pid` runs (a zombie, which nobody reaped yet, does not).
bool running(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t name_end = stat.rfind(')');
  return name_end != std::string::npos && name_end + 2 < stat.size() && stat[name_end + 2] != 'Z';
}

// A parent killed outright (SIGKILL; it cannot pass anything on) takes its measuring child with
// it: the child went on measuring for the rest of its rounds before, beside whatever ran next.
TEST(Interrupt, AChildEndsWhenItsParentIsKilled) {
  const TempDir dir;
  write_long_config(dir);
  // The parent's temporary folder (its children's reports) stays behind it: in `dir`, not /tmp.
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string saved_tmpdir = tmpdir != nullptr ? tmpdir : "";
  setenv("TMPDIR", dir.path().c_str(), 1);
  const pid_t pid = spawn({MTC_BENCH_EXE, "--config", dir / "long.json", "--quiet", "--direction",
                           "h2h", "--strategy", "to", "--round-time", "30", "--min-time", "120",
                           "--timeout", "120", "--processes", "3", "--json", dir / "r.json"},
                          dir / "out.txt", dir / "err.txt");
  if (tmpdir != nullptr) {
    setenv("TMPDIR", saved_tmpdir.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  ASSERT_GT(pid, 0) << "cannot start " << MTC_BENCH_EXE;
  const auto start = Clock::now();
  std::vector<pid_t> children;
  while (children.empty() && Clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    children = children_of(pid);
  }
  ASSERT_EQ(children.size(), 1u) << "no child process appeared";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the child is measuring
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  wait_for(pid, std::chrono::seconds(10));
  // The child is this test's no longer (it was reparented): its state says whether it ended.
  const auto killed = Clock::now();
  while (running(children.front()) && Clock::now() - killed < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const bool still_running = running(children.front());
  if (still_running) kill(children.front(), SIGKILL);
  EXPECT_FALSE(still_running) << "the child went on measuring after its parent was killed";
}

}  // namespace
}  // namespace mtc::bench
