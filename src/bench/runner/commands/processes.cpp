#include "runner/commands/processes.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

#include "errors.h"
#include "report/report_reader.h"
#include "runner/cli/run_options.h"
#include "runner/env/environment.h"
#include "runner/env/host_canary.h"
#include "runner/measure/interrupt.h"

extern char** environ;

namespace mtc::bench {
namespace {

using json = nlohmann::json;

// The parent's process id, in each child's environment: a child whose parent is gone ends.
constexpr const char* kParentPidVariable = "MTC_BENCH_PARENT_PID";

// Not std::filesystem::remove_all: libtorch exports its own copy of it, built for another
// standard library ABI, and the dynamic linker may bind this call to that one.
void remove_folder(const std::string& folder) {
  nftw(
      folder.c_str(),
      [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

int run_child(const std::vector<std::string>& arguments, const std::string& stdout_path) {
  std::vector<char*> argv;
  for (const std::string& a : arguments) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // The children's tables would repeat the merged one: they go to a file.
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> environment{fmt::format("{}={}", kParentPidVariable, getpid())};
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!std::string_view(*entry).starts_with(std::string(kParentPidVariable) + "="))
      environment.emplace_back(*entry);
  }
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, executable_for_children().c_str(), &actions, nullptr,
                                  argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw std::runtime_error(fmt::format("--processes: cannot start a child: error {}", spawned));
  int status = 0;
  bool passed_on = false;
  // Polled, not a blocking waitpid: a signal that lands before the wait begins (while the child
  // is being started) interrupts nothing, and the child would never hear of it.
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) throw std::runtime_error("--processes: lost a child process");
    // A SIGINT or SIGTERM sent to this process alone: the child stops at its next sample too
    // and reports.
    if (interrupted() && !passed_on) passed_on = kill(pid, SIGTERM) == 0;
    usleep(5000);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// Appends one child's samples of one case to the merged series.
struct CaseSeries {
  std::vector<Round> rounds;
  std::vector<double> wall, blocked, cpu, gpu, exposed;
  std::vector<int64_t> round_of_sample;
  bool has_gpu = false;
  bool has_exposed = false;

  void add(const json& raw, int process) {
    const auto w = raw["wall_s"].get<std::vector<double>>();
    const auto round = raw["round"].get<std::vector<int64_t>>();
    const size_t first_round = rounds.size();
    for (size_t i = 0; i < w.size(); ++i) {
      const size_t r = first_round + static_cast<size_t>(round.at(i));
      if (rounds.size() <= r) rounds.resize(r + 1, Round{{}, process});
      rounds[r].samples.push_back(w[i]);
      round_of_sample.push_back(static_cast<int64_t>(r));
    }
    wall.insert(wall.end(), w.begin(), w.end());
    const auto append = [&raw](const char* name, std::vector<double>& to) {
      const json& series = raw.value(name, json());
      if (!series.is_array()) return false;
      const auto values = series.get<std::vector<double>>();
      to.insert(to.end(), values.begin(), values.end());
      return true;
    };
    append("caller_blocked_s", blocked);
    append("cpu_s", cpu);
    has_gpu = append("gpu_s", gpu) || has_gpu;
    has_exposed = append("exposed_s", exposed) || has_exposed;
  }
};

// What identifies a case and what became of it: the fields a skipped case has.
Entry entry_head(const Entry& part) {
  Entry e;
  e.device = part.device;
  e.direction = part.direction;
  e.strategy = part.strategy;
  e.pattern = part.pattern;
  e.source = part.source;
  e.target = part.target;
  e.reason = part.reason;
  e.status = part.status;
  e.verified = part.verified;
  return e;
}

// One case over every process: the worst status wins (a failure in one process fails the case).
Entry merged_entry(const std::vector<const Entry*>& parts, int64_t tensors, int64_t bytes,
                   double level, bool keep_raw) {
  Entry e = entry_head(*parts.front());
  CaseSeries series;
  // The processes' paired figures, in the order their rounds are merged; kept only when every
  // process has them against the same baseline, so they stay aligned with the rounds.
  std::optional<PairedSteps> paired = PairedSteps{};
  for (size_t p = 0; p < parts.size(); ++p) {
    const Entry& part = *parts[p];
    if (part.status != EntryStatus::kOk && e.status == EntryStatus::kOk) {
      e.status = part.status;
      e.reason = fmt::format("process {}: {}", p, part.reason);
      e.verified = part.verified;
    }
    if (part.status == EntryStatus::kSkipped) return e;
    e.stop_reason = part.stop_reason;
    e.warmup += part.warmup;
    e.measure_time_s += part.measure_time_s;
    if (!part.engine.is_null()) e.engine = part.engine;
    if (part.raw_samples.is_object()) series.add(part.raw_samples, static_cast<int>(p));
    const std::optional<PairedSteps>& steps = part.paired_steps;
    if (paired && steps && (p == 0 || steps->baseline == paired->baseline)) {
      paired->baseline = steps->baseline;
      paired->median_log_ratio.insert(paired->median_log_ratio.end(),
                                      steps->median_log_ratio.begin(),
                                      steps->median_log_ratio.end());
    } else {
      paired.reset();
    }
  }
  e.rounds = summarize_rounds(series.rounds, level);
  if (paired && static_cast<int64_t>(paired->median_log_ratio.size()) == e.rounds.rounds)
    e.paired_steps = paired;
  e.wall = summarize(series.wall);
  e.wall.noise = e.rounds.reported();
  e.caller_blocked = summarize(series.blocked);
  e.cpu = summarize(series.cpu);
  if (series.has_gpu) e.gpu = summarize(series.gpu);
  if (series.has_exposed) e.exposed = summarize(series.exposed);
  if (e.wall.median > 0.0) {
    e.gb_per_s = static_cast<double>(bytes) / e.wall.median / 1e9;
    e.tensors_per_s = static_cast<double>(tensors) / e.wall.median;
  }
  if (keep_raw && !series.wall.empty()) {
    e.raw_samples = {{"round", series.round_of_sample},
                     {"wall_s", series.wall},
                     {"caller_blocked_s", series.blocked},
                     {"gpu_s", series.has_gpu ? json(series.gpu) : json(nullptr)},
                     {"cpu_s", series.cpu},
                     {"exposed_s", series.has_exposed ? json(series.exposed) : json(nullptr)}};
  }
  return e;
}

std::string& child_executable() {
  static std::string path;
  return path;
}

}  // namespace

void set_executable_for_children(std::string path) { child_executable() = std::move(path); }
const std::string& executable_for_children() { return child_executable(); }

std::vector<std::string> child_arguments(const std::vector<std::string>& parent, int index,
                                         int count, const std::string& json_path) {
  static const std::vector<ParentOnlyOption> parent_only = parent_only_options();
  std::vector<std::string> args{parent.empty() ? "mtc-bench" : parent.front()};
  for (size_t i = 1; i < parent.size(); ++i) {
    const std::string& a = parent[i];
    bool dropped = false;
    for (const auto& [name, takes_value] : parent_only) {
      if (a == name) {
        if (takes_value) ++i;
        dropped = true;
      } else if (takes_value && a.rfind(name + "=", 0) == 0) {
        dropped = true;
      }
    }
    if (!dropped) args.push_back(a);
  }
  for (const char* a : {"--quiet", "--raw-samples"}) args.emplace_back(a);
  args.insert(args.end(), {"--child-index", std::to_string(index), "--child-count",
                           std::to_string(count), "--json", json_path});
  return args;
}

Report merge_process_reports(const std::vector<Report>& reports, bool keep_raw) {
  const Report& first = reports.front();
  Report merged;
  merged.context = first.context;
  merged.context["host_state_by_process"] = json::array();
  for (const Report& r : reports) {
    merged.context["host_state_by_process"].push_back(r.context.value("host_state", json()));
  }
  merged.profile = first.profile;
  merged.ab = first.ab;
  for (size_t s = 0; s < first.runs.size(); ++s) {
    const RunSection& run = first.runs[s];
    RunSection section;
    section.sweep_point = run.sweep_point;
    section.config_file = run.config_file;
    section.config_name = run.config_name;
    section.seed = run.seed;
    section.config_given = run.config_given;
    section.config_resolved = run.config_resolved;
    section.settings = run.settings;
    section.settings["processes"] = reports.size();
    section.workload = run.workload;
    section.workload_hash = run.workload_hash;
    section.tensors = run.tensors;
    section.bytes = run.bytes;
    // The host canary of every process's rounds, judged together (its note is made again).
    std::vector<CanaryRecord> canary;
    for (size_t p = 0; p < reports.size(); ++p) {
      const RunSection& child = reports[p].runs.at(s);
      const auto records = canary_records(child.host_canary, static_cast<int>(p));
      canary.insert(canary.end(), records.begin(), records.end());
    }
    for (const std::string& note : run.notes) {
      if (!note.starts_with(kCanaryNotePrefix)) section.notes.push_back(note);
    }
    section.host_canary = canary_json(canary);
    if (const std::string note = canary_note(canary); !note.empty()) section.notes.push_back(note);
    const double level = section.settings.value("interval_level", kDefaultIntervalLevel);
    for (size_t i = 0; i < run.entries.size(); ++i) {
      std::vector<const Entry*> parts;
      for (const Report& r : reports) parts.push_back(&r.runs.at(s).entries.at(i));
      section.entries.push_back(
          merged_entry(parts, section.tensors, section.bytes, level, keep_raw));
    }
    compute_speedups(section);
    compute_aggregates(section);
    merged.runs.push_back(std::move(section));
  }
  merged.exit_code = exit_code_for(merged);
  return merged;
}

void end_with_parent() {
  const char* parent = std::getenv(kParentPidVariable);
  if (parent == nullptr) return;
  // The kernel kills this process when the parent's thread that started it ends, whatever ends
  // it (SIGKILL included); a parent already gone before the request took effect is caught by
  // comparing the ids.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (std::to_string(getppid()) != parent) _exit(static_cast<int>(ExitCode::kInterrupted));
}

int remove_abandoned_process_folders(const std::string& tmp) {
  DIR* dir = opendir(tmp.c_str());
  if (dir == nullptr) return 0;
  int removed = 0;
  const std::string prefix = kProcessFolderPrefix;
  while (const dirent* entry = readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (!name.starts_with(prefix)) continue;
    // PID-XXXXXX: the parent that made it, then mkdtemp's six characters.
    const std::string_view rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos || rest.size() != dash + 7) continue;
    const std::string pid_text(rest.substr(0, dash));
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    // Alive (or another user's process, whose existence kill() reports as EPERM): left alone.
    if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string path = tmp + "/" + std::string(name);
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != geteuid())
      continue;
    remove_folder(path);
    ++removed;
  }
  closedir(dir);
  return removed;
}

Report run_child_processes(const CommandLine& command_line, int count, std::ostream& err) {
  const char* tmp_variable = std::getenv("TMPDIR");
  const std::string tmp = tmp_variable != nullptr && *tmp_variable != '\0' ? tmp_variable : "/tmp";
  // A parent killed outright (SIGKILL) could not remove its folder; its children died with it.
  remove_abandoned_process_folders(tmp);
  std::string folder = fmt::format("{}/{}{}-XXXXXX", tmp, kProcessFolderPrefix, getpid());
  if (mkdtemp(folder.data()) == nullptr)
    throw std::runtime_error("--processes: cannot create a temporary folder");
  std::vector<Report> reports;
  try {
    for (int i = 0; i < count; ++i) {
      err << fmt::format("mtc-bench: process {}/{}\n", i + 1, count);
      const std::string json_path = fmt::format("{}/process-{}.json", folder, i);
      const int code = run_child(child_arguments(command_line.arguments, i, count, json_path),
                                 fmt::format("{}/process-{}.txt", folder, i));
      if (code == static_cast<int>(ExitCode::kUsage))
        throw UsageError(fmt::format("process {} rejected its input", i));
      struct stat info {};
      const bool written = ::stat(json_path.c_str(), &info) == 0;
      // After Ctrl-C the signal passed on may reach a child still starting, before it has set up
      // its handler: it ends without a report, having measured nothing. Not an error then.
      if (!written && interrupted()) break;
      if (!written) {
        throw std::runtime_error(
            fmt::format("--processes: process {} wrote no report (exit code {})", i, code));
      }
      // An interrupted process measured only some cases: its report is merged only when there is
      // no other, as the others' cases would not line up with it.
      const bool partial = code == static_cast<int>(ExitCode::kInterrupted);
      if (!partial || reports.empty()) reports.push_back(read_report(json_path));
      if (partial || interrupted()) break;
    }
  } catch (...) {
    remove_folder(folder);
    throw;
  }
  remove_folder(folder);
  if (reports.empty()) {
    // Interrupted before any process had measured: a report of no runs, still a whole one.
    Report nothing;
    nothing.context = collect_environment();
    return nothing;
  }
  return merge_process_reports(reports, command_line.run.raw_samples);
}

}  // namespace mtc::bench
