#include "runner/cli/config_paths.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <set>

// POSIX calls rather than std::filesystem: libtorch.so exports its own copies of several
// std::filesystem functions (built with another libstdc++), and the dynamic linker binds ours
// to them; remove_all, for one, crashes there.

namespace mtc::bench {
namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string parent(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string real_path(const std::string& path) {
  std::array<char, PATH_MAX> buffer{};
  return realpath(path.c_str(), buffer.data()) != nullptr ? std::string(buffer.data()) : path;
}

std::string executable_path() {
  std::array<char, PATH_MAX> buffer{};
  const ssize_t n = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  return n > 0 ? std::string(buffer.data(), static_cast<size_t>(n)) : std::string();
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<std::string> config_search_dirs() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("MTC_CONFIG_DIR")) candidates.emplace_back(env);
#ifdef MTC_SOURCE_DIR
  candidates.emplace_back(std::string(MTC_SOURCE_DIR) + "/configs");
#endif
  const std::string exe = executable_path();
  if (!exe.empty()) {
    const std::string prefix = parent(parent(exe));
    candidates.push_back(prefix + "/configs");
    candidates.push_back(prefix + "/share/mtc/configs");
  }
  std::vector<std::string> dirs;
  for (const std::string& dir : candidates) {
    if (!is_dir(dir)) continue;
    const std::string canonical = real_path(dir);
    if (std::find(dirs.begin(), dirs.end(), canonical) == dirs.end()) dirs.push_back(canonical);
  }
  return dirs;
}

std::string resolve_config_path(const std::string& arg, const std::vector<std::string>& dirs) {
  if (arg.empty() || is_file(arg)) return arg;
  // Only bare names are looked up: a path with a folder that does not exist is a typo to report.
  if (arg.find('/') != std::string::npos) return arg;
  for (const std::string& dir : dirs) {
    for (const std::string& candidate : {dir + "/" + arg, dir + "/" + arg + ".json"}) {
      if (is_file(candidate)) return candidate;
    }
  }
  return arg;
}

std::vector<std::string> list_configs(const std::vector<std::string>& dirs) {
  std::vector<std::string> configs;
  std::set<std::string> seen;
  for (const std::string& dir : dirs) {
    const std::unique_ptr<DIR, int (*)(DIR*)> handle(opendir(dir.c_str()), closedir);
    if (!handle) continue;
    std::vector<std::string> names;
    while (const dirent* entry = readdir(handle.get())) {
      const std::string name = entry->d_name;
      // Schemas sit beside the configs but are not configs.
      if (ends_with(name, ".json") && !ends_with(name, ".schema.json") &&
          is_file(dir + "/" + name)) {
        names.push_back(name);
      }
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      if (seen.insert(name).second) configs.push_back(dir + "/" + name);
    }
  }
  return configs;
}

}  // namespace mtc::bench
