// Parses a node that names a data file ("npy" or "pt", and a config's "input"): its file name,
// resolved against the config's folder, and its optional "memory"; the file is read here, once,
// so that a missing or broken file is reported at the config's place before anything is drawn.
#pragma once

#include <filesystem>
#include <string>

#include "workload/detail/json_checks.h"
#include "workload/detail/spec.h"

namespace mtc::bench::detail {

// `body` is a file name or {"file": ..., "memory": ...}; `npy` picks the reader (a .npy array or
// a torch.save file). Errors name `body_path` (or its "file"), the reader's own message kept.
LoadedNode parse_loaded(const JsonChecks& checks, const Json& body, const std::string& body_path,
                        bool npy, const std::filesystem::path& base_dir);

}  // namespace mtc::bench::detail
