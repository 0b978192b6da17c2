#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <sstream>

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
bool is_the_config_schema(const std::string& text) {
  // Parsed only when it names an `$id`: a config's text is parsed once more, as the config, and
  // a large one (a structure of many literal nodes) would otherwise be parsed twice.
  if (text.find("\"$id\"") == std::string::npos) return false;
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() && doc.value("$id", std::string()).ends_with("/configs/spec.schema.json");
}

}  // namespace

int validate_command(const ValidateOptions& options, std::ostream& out, std::ostream& err) {
  const auto dirs = config_search_dirs();
  const bool cuda = cuda_device_count() > 0;
  int failures = 0;
  for (const std::string& arg : options.config_paths) {
    const std::string path = resolve_config_path(arg, dirs);
    try {
      // Read once, through the checks a run's --config gets: a folder, a named pipe or a huge
      // file is one line of "invalid", and the next file is still checked.
      const std::string text = read_config_text(path);
      if (is_the_config_schema(text)) {
        out << fmt::format("skipped: {}: the configs' JSON Schema, not a config\n", path);
        continue;
      }
      const Config config = parse_config(text, path, options.sets);
      // One workload, as a run without the step patterns holds; the totals are checked without
      // building first, so a config that would exhaust the machine fails in a second. "ok" only
      // once they pass: a file is either ok or invalid, never both.
      const BuildOptions build_options = build_options_for(physical_memory_bytes(), 1, cuda);
      const WorkloadTotals totals = count_workload(config, build_options);
      std::ostringstream details;
      if (options.build) {
        BuildInfo info;
        const c10::IValue workload = build_workload(config, build_options, &info);
        print_summary(details, summarize_workload(workload, info));
      } else {
        details << fmt::format("  {} nodes, {} bytes of tensors and literal strings\n",
                               totals.nodes, totals.bytes);
      }
      out << fmt::format("ok: {} ({}): seed {}, directions {}\n", path, config.name, config.seed,
                         fmt::join(config.directions, ","))
          << details.str();
    } catch (const ConfigError& e) {
      ++failures;
      err << "invalid: " << e.what() << '\n';
    }
  }
  return failures == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
}

}  // namespace mtc::bench
