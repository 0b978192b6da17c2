#include "report/output_paths.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "errors.h"
#include "shown.h"

namespace mtc::bench {

// Only std::filesystem::path's string handling is used: libtorch, linked into the same program,
// exports copies of the std::filesystem operations that misbehave.
FileIdentity identity_of(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) return {true, info.st_dev, info.st_ino, {}};
  const std::filesystem::path normal = std::filesystem::path(path).lexically_normal();
  const std::string folder = normal.has_parent_path() ? normal.parent_path().string() : ".";
  const std::unique_ptr<char, decltype(&std::free)> real(::realpath(folder.c_str(), nullptr),
                                                         &std::free);
  if (real == nullptr) return {false, 0, 0, normal.string()};
  return {false, 0, 0, (std::filesystem::path(real.get()) / normal.filename()).string()};
}

void check_outputs_apart(const std::vector<NamedPath>& inputs,
                         const std::vector<NamedPath>& outputs) {
  std::vector<std::pair<const NamedPath*, FileIdentity>> seen;
  for (const NamedPath& input : inputs) {
    if (!input.path.empty()) seen.emplace_back(&input, identity_of(input.path));
  }
  const size_t input_count = seen.size();
  for (const NamedPath& output : outputs) {
    if (output.path.empty()) continue;
    const FileIdentity identity = identity_of(output.path);
    for (size_t i = 0; i < seen.size(); ++i) {
      if (!(seen[i].second == identity)) continue;
      const NamedPath& other = *seen[i].first;
      throw UsageError(fmt::format("{} {}: the same file as {} {}: {}", output.option,
                                   shown_path(output.path), other.option, shown_path(other.path),
                                   i < input_count ? "writing it would destroy what is read"
                                                   : "one output would replace the other"));
    }
    seen.emplace_back(&output, identity);
  }
}

}  // namespace mtc::bench
