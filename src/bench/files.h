// File checks shared by every reader of a named file: the config, .npy and .pt readers and the
// report reader (which `compare` and the merge of --processes use). Below every component that
// reads files, so the report reader, which builds without ATen, shares them with the workload's.
//
// POSIX calls rather than std::filesystem operations on purpose: libtorch.so exports its own
// copies of std::filesystem::status, file_size, absolute, remove_all, ... (a statically linked
// libstdc++fs), which take precedence over the system's at run time in any binary linking torch,
// and some of them crash there. std::filesystem::path itself (string manipulation) is safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mtc::bench {

// The size of a regular file that exists and can be opened; throws ConfigError naming `path`
// ("no such file", "it is a directory", "not a regular file": a named pipe would block its reader,
// a device may never end) otherwise.
uint64_t readable_file_size(const std::string& path);

// The same, refused as "N bytes is too large for a WHAT (limit MAX)" past `max_bytes`, before
// anything of the file is read: the config's and the report's limits.
uint64_t readable_file_size(const std::string& path, uint64_t max_bytes, std::string_view what);

// The whole text of `path`, checked as readable_file_size(path, max_bytes, what) checks it first.
// A NUL byte is refused, naming its line and column ("not a text file"): JSON readers stop at
// one and called a file with one "unexpected end of input" at that place, as if it were cut short.
std::string read_text_file(const std::string& path, uint64_t max_bytes, std::string_view what);

// `path` made absolute against the current directory (no symlink resolution).
std::string absolute_path(const std::string& path);

}  // namespace mtc::bench
