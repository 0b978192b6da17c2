// Compiles the "structure" of a config (and the "defs" it refers to) into a WorkloadSpec,
// checking everything that can be checked before drawing: node syntax, leaves, symbol scopes,
// definition cycles, and the .npy / .pt files it names (read here, once).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "workload/detail/json_checks.h"
#include "workload/detail/spec.h"

namespace mtc::bench::detail {

// Deeper nesting (counting expanded definitions) is rejected; it keeps recursion bounded.
inline constexpr int kMaxNesting = 256;

// `defs` may be null (no "defs" in the config); relative file names resolve against `base_dir`.
std::shared_ptr<const WorkloadSpec> compile_spec(const JsonChecks& checks, const Json& structure,
                                                 const std::string& path, const Json* defs,
                                                 const std::filesystem::path& base_dir);

// The workload of a config's "input" entry: a torch.save file, given as a file name or
// {"file": ..., "memory": ...} like a "pt" node.
std::shared_ptr<const WorkloadSpec> compile_input(const JsonChecks& checks, const Json& input,
                                                  const std::string& path,
                                                  const std::filesystem::path& base_dir);

}  // namespace mtc::bench::detail
