// A temporary folder for a test, removed with everything in it. POSIX, not std::filesystem:
// libtorch.so exports copies of some std::filesystem functions that crash (remove_all).
#pragma once

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace mtc::bench::testing_support {

class TempDir {
 public:
  TempDir() {
    std::vector<char> pattern{'/', 't', 'm', 'p', '/', 'm', 't', 'c', '_', 'b', 'e',
                              'n', 'c', 'h', '_', 'X', 'X', 'X', 'X', 'X', 'X', '\0'};
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern.data();
  }
  ~TempDir() {
    nftw(
        path_.c_str(),
        [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir&) = delete;  // owns the folder
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  std::string make_dir(const std::string& name) const {
    const std::string dir = *this / name;
    if (mkdir(dir.c_str(), 0755) != 0) throw std::runtime_error("mkdir failed: " + dir);
    return dir;
  }

 private:
  std::string path_;
};

}  // namespace mtc::bench::testing_support
