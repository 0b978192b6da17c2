// The files a command writes, kept apart from the files it reads and from each other. Checked
// before anything is written: a report over its own config (`-c X --json X`) or over the
// baseline it compares with destroys what the user meant to keep, and two outputs on one file
// keep only the one written last.
#pragma once

#include <string>
#include <vector>

namespace mtc::bench {

// A path and where it came from, as errors name it: "--json", "--config", "baseline".
struct NamedPath {
  std::string option;
  std::string path;
};

// Throws UsageError naming both when an output names the same file as an input or as an earlier
// output; empty paths are skipped. The same file: the same device and inode where it exists
// (links and other spellings included), else the same name in the same real folder, else the
// same normalized path.
void check_outputs_apart(const std::vector<NamedPath>& inputs,
                         const std::vector<NamedPath>& outputs);

}  // namespace mtc::bench
