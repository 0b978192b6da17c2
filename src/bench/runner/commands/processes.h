// --processes N: the cases measured in N fresh processes, one after another, their rounds
// merged. Rounds inside one process share that process's lot (which cores its threads landed
// on, how its allocator and page tables grew); a fresh process draws again. The merged
// interval (stats/rounds.h) then covers the variation between processes too.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "report/report.h"
#include "runner/cli/options.h"

namespace mtc::bench {

// The program the children run: main() registers "/proc/self/exe". Where nothing is registered
// (mtc-bench's entry point embedded in a test or another program) runs stay in one process.
void set_executable_for_children(std::string path);
const std::string& executable_for_children();

// Runs this executable N times with the same arguments (each child writes a JSON report with
// raw samples to a temporary folder) and merges the children's reports into one. Returns the
// merged report; throws UsageError when a child rejects its input, std::runtime_error when
// one cannot be started or writes no report.
Report run_child_processes(const CommandLine& command_line, int count, std::ostream& err);

// The children's reports go to a folder TMPDIR/mtc-bench-processes-PID-XXXXXX, PID the parent's,
// removed when the parent ends. Removes the folders of that form in `tmp` that belong to this
// user and whose parent no longer runs (one killed outright); returns how many. Run by every
// --processes parent before it makes its own folder.
inline constexpr const char* kProcessFolderPrefix = "mtc-bench-processes-";
int remove_abandoned_process_folders(const std::string& tmp);

// In a child (started by run_child_processes): the process ends as soon as its parent does, so
// that a parent killed outright (SIGKILL, a second Ctrl-C) leaves no child measuring beside
// whatever runs next. Does nothing in a process that is not such a child.
void end_with_parent();

// The arguments of child `index`: the parent's without the output and process options, plus
// what a child needs. Exposed for tests.
std::vector<std::string> child_arguments(const std::vector<std::string>& parent, int index,
                                         int count, const std::string& json_path);

// Merges the children's reports (same command, same configs; as report/report_reader.h reads
// what they wrote) into one Report: samples and rounds are pooled, each round labelled with its
// process; summaries, intervals, speedups and aggregates are computed again. `keep_raw` keeps
// the raw samples in the result.
Report merge_process_reports(const std::vector<Report>& reports, bool keep_raw);

}  // namespace mtc::bench
