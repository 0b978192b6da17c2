#include "workload/detail/loaded_node_parser.h"

#include <fmt/format.h>

#include "errors.h"
#include "workload/detail/tensor_spec_parser.h"
#include "workload/npy.h"
#include "workload/saved_batch.h"

namespace mtc::bench::detail {

namespace fs = std::filesystem;

LoadedNode parse_loaded(const JsonChecks& checks, const Json& body, const std::string& body_path,
                        bool npy, const fs::path& base_dir) {
  LoadedNode loaded;
  std::string file_path = body_path;
  if (body.is_object()) {
    checks.allow_keys(body, body_path, {"file", "memory"});
    checks.require_key(body, body_path, "file");
    file_path = child_path(body_path, "file");
    loaded.file = checks.get_string(body["file"], file_path);
    if (body.contains("memory"))
      loaded.memory = parse_memory(checks, body["memory"], child_path(body_path, "memory"));
  } else if (body.is_string()) {
    loaded.file = body.get<std::string>();
  } else {
    checks.fail(body_path,
                fmt::format("expected a file name or {{\"file\": ..., \"memory\": ...}}; got {}",
                            type_name(body)));
  }
  if (loaded.file.empty()) checks.fail(file_path, "empty file name");
  fs::path file(loaded.file);
  if (file.is_relative()) file = base_dir / file;
  loaded.file = file.lexically_normal().string();
  // The reader names the data file; the config file and JSON path are added here.
  try {
    loaded.value = npy ? c10::IValue(load_npy(loaded.file)) : load_saved_batch(loaded.file);
  } catch (const ConfigError& e) {
    checks.fail(file_path, e.what());
  }
  return loaded;
}

}  // namespace mtc::bench::detail
