#include "report/report_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "errors.h"
#include "shown.h"

namespace mtc::bench {
namespace {

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string error_text(int error) { return std::strerror(error); }

// Why the entry at `path` must not be replaced, or empty when there is none or it is a regular
// file. lstat, not stat: rename() replaces a symbolic link itself and leaves its target as it
// was, so a report written "through" a link would land beside what the user meant. A named pipe
// or a device would be swapped for a plain file (or, written to directly, block or reach the
// hardware); none of them is a report.
std::string not_replaceable(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return errno == ENOENT ? "" : error_text(errno);
  if (S_ISREG(info.st_mode)) return "";
  if (S_ISDIR(info.st_mode)) return "it is a folder";
  const char* kind = S_ISLNK(info.st_mode)                            ? "a symbolic link"
                     : S_ISFIFO(info.st_mode)                         ? "a named pipe"
                     : S_ISSOCK(info.st_mode)                         ? "a socket"
                     : S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) ? "a device"
                                                                      : "not a file";
  return fmt::format("it is {}; a report replaces a regular file only", kind);
}

}  // namespace

ReportFile::ReportFile(std::string option, std::string path)
    : option_(std::move(option)), path_(std::move(path)) {
  if (path_.empty()) return;
  const auto refuse = [&](const std::string& why) {
    return UsageError(fmt::format("{} {}: cannot write it: {}", option_, shown_path(path_), why));
  };
  if (const std::string why = not_replaceable(path_); !why.empty()) throw refuse(why);
  // rename() would replace a read-only file; a file made read-only is one not to overwrite.
  if (::access(path_.c_str(), F_OK) == 0 && ::access(path_.c_str(), W_OK) != 0) {
    throw refuse(error_text(errno));
  }
  // access() lets root write anywhere (a CI container's usual user): a file whose mode gives
  // nobody write permission was made read-only on purpose, and is refused for root too. Not a
  // folder: root's own are often 0550 or 0555 (/root, / on some systems) and meant to be written.
  struct stat info {};
  if (::stat(path_.c_str(), &info) == 0 && (info.st_mode & 0222) == 0) {
    throw refuse(fmt::format("it is read-only (mode {:o})", info.st_mode & 07777));
  }
  // Where the file system allows it, an unnamed file in the folder (O_TMPFILE) proves now that
  // a file can be made there, and leaves nothing behind a run killed outright (SIGKILL, a second
  // Ctrl-C); the named temporary file is made only in commit(). Elsewhere it is made now.
  const int unnamed = ::open(folder_of(path_).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (unnamed >= 0) {
    ::close(unnamed);
    checked_only_ = true;
    return;
  }
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) throw refuse(error_text(errno));
  open_temp_file();
  if (fd_ < 0) throw refuse(error_text(errno));
}

// Hidden, next to the destination (rename() is atomic only within one file system), unique to
// this process and object, and short whatever the destination's name (a name near the file
// system's limit would leave no room for a suffix, and fail only at the end). Mode 0666 less the
// umask, as the file itself would get. Leaves fd_ negative and errno set when no file could be
// made.
void ReportFile::open_temp_file() {
  static std::atomic<int> counter{0};
  const std::string stem = folder_of(path_) + "/.mtc-bench-";
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temp_path_ = fmt::format("{}{}-{}.tmp", stem, ::getpid(), counter.fetch_add(1));
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
}

ReportFile::~ReportFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
  }
}

void ReportFile::commit(const std::string& text) {
  if (std::exchange(checked_only_, false)) {
    open_temp_file();
    if (fd_ < 0) {
      throw std::runtime_error(
          fmt::format("writing {} failed (open): {}", path_, error_text(errno)));
    }
  }
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);  // from here on this function closes it
  auto fail = [&](const char* step, bool still_open) {
    const int error = errno;
    if (still_open) ::close(fd);
    ::unlink(temp_path_.c_str());
    throw std::runtime_error(
        fmt::format("writing {} failed ({}): {}", path_, step, error_text(error)));
  };
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write", true);
    written += static_cast<size_t>(n);
  }
  while (::fsync(fd) != 0) {
    if (errno != EINTR) fail("fsync", true);
  }
  if (::close(fd) != 0) fail("close", false);
  // A run takes minutes: what took the path meanwhile is checked again before it is replaced.
  if (const std::string why = not_replaceable(path_); !why.empty()) {
    ::unlink(temp_path_.c_str());
    throw std::runtime_error(fmt::format("{} {}: not written: {}", option_, path_, why));
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("rename", false);
}

}  // namespace mtc::bench
