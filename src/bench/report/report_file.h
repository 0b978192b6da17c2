// A report file that is either complete or absent: the text goes to a temporary file in the
// same folder, which is renamed over the destination once fully written. A run that dies (or is
// killed) before that leaves the destination as it was, never half-written.
#pragma once

#include <string>

namespace mtc::bench {

class ReportFile {
 public:
  // Makes sure now that a temporary file can be made beside the path (where the file system
  // allows, with an unnamed file that leaves nothing behind; elsewhere by making it now), so a
  // path that cannot take a report fails (UsageError naming `option` and the path) before
  // anything is measured: a missing or read-only folder, a
  // read-only file, and anything at the path that is not a regular file (a folder, a symbolic
  // link, a named pipe, a device, a socket), which the rename would replace. An empty path means
  // no file: commit() does nothing.
  ReportFile(std::string option, std::string path);
  ~ReportFile();                           // removes the temporary file unless committed
  ReportFile(const ReportFile&) = delete;  // owns the temporary file
  ReportFile& operator=(const ReportFile&) = delete;

  const std::string& path() const { return path_; }
  // Writes `text`, flushes it to disk and renames it into place; throws std::runtime_error
  // naming the path on any failure (the destination is then untouched), also when something
  // other than a regular file took the path since the constructor looked.
  void commit(const std::string& text);

 private:
  std::string option_;
  std::string path_;
  void open_temp_file();

  std::string temp_path_;
  int fd_ = -1;
  bool checked_only_ = false;  // the folder took an unnamed file; the temporary one is made later
};

}  // namespace mtc::bench
