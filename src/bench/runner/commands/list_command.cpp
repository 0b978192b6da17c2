#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runner/cli/config_paths.h"
#include "runner/commands/commands.h"
#include "runner/strategies/catalog.h"

namespace mtc::bench {
namespace {

std::string directions_text(const StrategyInfo& info) {
  std::string text;
  for (Direction d : info.directions) {
    if (!text.empty()) text += ",";
    text += to_string(d);
  }
  return text;
}

// The config's "description" (or "name"), without validating it: `validate` does that.
std::string config_blurb(const std::string& path) {
  std::ifstream in(path);
  const auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return "(not valid JSON)";
  if (doc.contains("description") && doc["description"].is_string()) return doc["description"];
  if (doc.contains("name") && doc["name"].is_string()) return doc["name"];
  return "";
}

}  // namespace

int list_command(const ListOptions& options, std::ostream& out) {
  if (options.strategies) {
    out << "Strategies (speedups are against `to`):\n";
    // Columns as wide as their longest entry, and a space.
    size_t name_width = 0;
    size_t directions_width = 0;
    for (const StrategyInfo& info : strategy_catalog()) {
      name_width = std::max(name_width, info.name.size() + 1);
      directions_width = std::max(directions_width, directions_text(info).size() + 1);
    }
    for (const StrategyInfo& info : strategy_catalog()) {
      out << fmt::format("  {:<{}}{:<{}}{}\n", info.name, name_width, directions_text(info),
                         directions_width, info.summary);
    }
  }
  if (options.configs) {
    if (options.strategies) out << '\n';
    const auto dirs = config_search_dirs();
    out << "Shipped configs (--config PATH, or just the name):\n";
    const auto configs = list_configs(dirs);
    if (configs.empty())
      out << "  none found (searched: " << fmt::format("{}", fmt::join(dirs, ", ")) << ")\n";
    for (const std::string& path : configs) {
      out << fmt::format("  {}\n      {}\n", path, config_blurb(path));
    }
  }
  return 0;
}

}  // namespace mtc::bench
