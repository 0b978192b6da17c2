// The files a command writes, kept apart from the files it reads and from each other. Checked
// before anything is written: a report over its own config (`-c X --json X`) or over the
// baseline it compares with destroys what the user meant to keep, and two outputs on one file
// keep only the one written last.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace mtc::bench {

// What tells two paths apart: the same device and inode where the file exists (links and other
// spellings included), else the same name in the same real folder, else the same normalized
// path.
struct FileIdentity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string name;  // where it does not exist: its real folder and its name

  bool operator==(const FileIdentity& other) const {
    if (exists != other.exists) return false;
    return exists ? device == other.device && inode == other.inode : name == other.name;
  }
};
FileIdentity identity_of(const std::string& path);

// A path and where it came from, as errors name it: "--json", "--config", "baseline".
struct NamedPath {
  std::string option;
  std::string path;
};

// Throws UsageError naming both when an output names the same file as an input or as an earlier
// output (the same FileIdentity); empty paths are skipped.
void check_outputs_apart(const std::vector<NamedPath>& inputs,
                         const std::vector<NamedPath>& outputs);

}  // namespace mtc::bench
