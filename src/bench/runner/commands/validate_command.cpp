#include <fmt/format.h>
#include <fmt/ranges.h>

#include "errors.h"
#include "runner/cli/config_paths.h"
#include "runner/commands/build_limits.h"
#include "runner/commands/commands.h"
#include "runner/env/environment.h"
#include "runner/env/host_state.h"
#include "workload/summary.h"
#include "workload/workload.h"

namespace mtc::bench {

int validate_command(const ValidateOptions& options, std::ostream& out, std::ostream& err) {
  const auto dirs = config_search_dirs();
  const bool cuda = cuda_device_count() > 0;
  int failures = 0;
  for (const std::string& arg : options.config_paths) {
    const std::string path = resolve_config_path(arg, dirs);
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
