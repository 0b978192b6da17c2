// Where shipped configs live and how `--config NAME` finds one.
#pragma once

#include <string>
#include <vector>

namespace mtc::bench {

// Folders searched for shipped configs, most specific first: $MTC_CONFIG_DIR, the source tree's
// configs/ (compiled in), <exe>/../configs (build tree), <exe>/../share/mtc/configs (installed).
// Only folders that exist.
std::vector<std::string> config_search_dirs();

// `arg` as is when it names a file; otherwise the first DIR/arg or DIR/arg.json in `dirs`;
// otherwise `arg` unchanged (load_config then reports the missing file).
std::string resolve_config_path(const std::string& arg, const std::vector<std::string>& dirs);

// Every *.json in `dirs`, as full paths, first folder first, each file name once.
std::vector<std::string> list_configs(const std::vector<std::string>& dirs);

}  // namespace mtc::bench
