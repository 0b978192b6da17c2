// File checks shared by the config, .npy and .pt readers.
//
// POSIX calls rather than std::filesystem operations on purpose: libtorch.so exports its own
// copies of std::filesystem::status, file_size, absolute, remove_all, ... (a statically linked
// libstdc++fs), which take precedence over the system's at run time in any binary linking torch,
// and some of them crash there. std::filesystem::path itself (string manipulation) is safe.
#pragma once

#include <cstdint>
#include <string>

namespace mtc::bench::detail {

// The size of a regular file that exists and can be opened; throws ConfigError naming `path`
// ("no such file", "it is a directory", ...) otherwise.
uint64_t readable_file_size(const std::string& path);

// `path` made absolute against the current directory (no symlink resolution).
std::string absolute_path(const std::string& path);

}  // namespace mtc::bench::detail
