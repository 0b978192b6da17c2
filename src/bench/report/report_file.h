// A report file that is either complete or absent: the text goes to a temporary file in the
// same folder, which is renamed over the destination once fully written. A run that dies (or is
// killed) before that leaves the destination as it was, never half-written.
#pragma once

#include <string>

namespace mtc::bench {

class ReportFile {
 public:
  // Creates the temporary file now, so an unwritable path fails (UsageError naming it) before
  // anything is measured. An empty path means no file: commit() does nothing.
  explicit ReportFile(std::string path);
  ~ReportFile();                           // removes the temporary file unless committed
  ReportFile(const ReportFile&) = delete;  // owns the temporary file
  ReportFile& operator=(const ReportFile&) = delete;

  const std::string& path() const { return path_; }
  // Writes `text`, flushes it to disk and renames it into place; throws std::runtime_error
  // naming the path on any failure (the destination is then untouched).
  void commit(const std::string& text);

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
};

}  // namespace mtc::bench
