#include "files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "errors.h"

namespace mtc::bench {

uint64_t readable_file_size(const std::string& path) {
  if (path.empty()) throw ConfigError(path, "", "empty file name");
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    throw ConfigError(path, "",
                      error == ENOENT ? std::string("cannot open: no such file")
                                      : std::string("cannot open: ") + std::strerror(error));
  }
  if (S_ISDIR(info.st_mode)) throw ConfigError(path, "", "cannot open: it is a directory");
  if (!S_ISREG(info.st_mode)) throw ConfigError(path, "", "cannot open: not a regular file");
  if (::access(path.c_str(), R_OK) != 0)
    throw ConfigError(path, "", "cannot open: permission denied");
  return static_cast<uint64_t>(info.st_size);
}

uint64_t readable_file_size(const std::string& path, uint64_t max_bytes, std::string_view what) {
  const uint64_t size = readable_file_size(path);
  if (size > max_bytes) {
    throw ConfigError(path, "",
                      std::to_string(size) + " bytes is too large for a " + std::string(what) +
                          " (limit " + std::to_string(max_bytes) + ")");
  }
  return size;
}

std::string read_text_file(const std::string& path, uint64_t max_bytes, std::string_view what) {
  readable_file_size(path, max_bytes, what);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in) throw ConfigError(path, "", "cannot read the " + std::string(what));
  std::string whole = std::move(text).str();
  if (const size_t nul = whole.find('\0'); nul != std::string::npos) {
    const auto line_start = whole.rfind('\n', nul);
    const size_t line =
        1 + static_cast<size_t>(std::count(whole.begin(), whole.begin() + nul, '\n'));
    const size_t column = line_start == std::string::npos ? nul + 1 : nul - line_start;
    throw ConfigError(path, "",
                      "a NUL byte at line " + std::to_string(line) + ", column " +
                          std::to_string(column) + ": not a text file");
  }
  return whole;
}

std::string absolute_path(const std::string& path) {
  const std::filesystem::path given(path);
  if (given.is_absolute()) return given.lexically_normal().string();
  std::vector<char> buffer(4096);
  while (::getcwd(buffer.data(), buffer.size()) == nullptr) {
    if (errno != ERANGE) return given.lexically_normal().string();
    buffer.resize(buffer.size() * 2);
  }
  return (std::filesystem::path(buffer.data()) / given).lexically_normal().string();
}

}  // namespace mtc::bench
