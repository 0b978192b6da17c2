// The readers under fuzzing take a path: each input is written to one temporary file, made once
// per process and rewritten for every input.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mtc::bench::fuzzing {

class InputFile {
 public:
  explicit InputFile(const char* suffix) {
    const char* tmp = std::getenv("TMPDIR");
    path_ =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/mtc-fuzz-XXXXXX" + suffix;
    const int fd = mkstemps(path_.data(), static_cast<int>(std::string(suffix).size()));
    if (fd < 0) std::abort();
    ::close(fd);
  }
  ~InputFile() { ::unlink(path_.c_str()); }
  InputFile(const InputFile&) = delete;  // owns the file
  InputFile& operator=(const InputFile&) = delete;

  // Replaces the file's contents with the input; returns its path.
  const std::string& write(const uint8_t* data, size_t size) const {
    FILE* file = std::fopen(path_.c_str(), "wb");
    if (file == nullptr || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0)
      std::abort();
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace mtc::bench::fuzzing
