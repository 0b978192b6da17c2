#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "errors.h"
#include "runner/cli/config_paths.h"
#include "runner/commands/build_limits.h"
#include "runner/commands/commands.h"
#include "runner/env/environment.h"
#include "runner/env/host_state.h"
#include "workload/summary.h"
#include "workload/workload.h"

namespace mtc::bench {
namespace {

// The configs' JSON Schema lives beside them (configs/spec.schema.json), so `validate
// configs/*.json` meets it: it is told apart by its own `$id` and skipped, not failed.
bool is_the_config_schema(const std::string& path) {
  std::ifstream file(path);
  const nlohmann::json doc = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() && doc.value("$id", std::string()).ends_with("/configs/spec.schema.json");
}

}  // namespace

int validate_command(const ValidateOptions& options, std::ostream& out, std::ostream& err) {
  const auto dirs = config_search_dirs();
  const bool cuda = cuda_device_count() > 0;
  int failures = 0;
  for (const std::string& arg : options.config_paths) {
    const std::string path = resolve_config_path(arg, dirs);
    if (is_the_config_schema(path)) {
      out << fmt::format("skipped: {}: the configs' JSON Schema, not a config\n", path);
      continue;
    }
    try {
      const Config config = load_config(path, options.sets);
      out << fmt::format("ok: {} ({}): seed {}, directions {}\n", path, config.name, config.seed,
                         fmt::join(config.directions, ","));
      // One workload, as a run without the step patterns holds; the totals are checked without
      // building first, so a config that would exhaust the machine fails in a second.
      const BuildOptions build_options = build_options_for(physical_memory_bytes(), 1, cuda);
      const WorkloadTotals totals = count_workload(config, build_options);
      if (options.build) {
        BuildInfo info;
        const c10::IValue workload = build_workload(config, build_options, &info);
        print_summary(out, summarize_workload(workload, info));
      } else {
        out << fmt::format("  {} nodes, {} bytes of tensors and literal strings\n", totals.nodes,
                           totals.bytes);
      }
    } catch (const ConfigError& e) {
      ++failures;
      err << "invalid: " << e.what() << '\n';
    }
  }
  return failures == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
}

}  // namespace mtc::bench
