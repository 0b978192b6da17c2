#include "runner/measure/pattern.h"

namespace mtc::bench {

std::string_view to_string(Pattern pattern) { return pattern == Pattern::kStep ? "step" : "hot"; }

std::optional<Pattern> parse_pattern(std::string_view name) {
  if (name == "hot") return Pattern::kHot;
  if (name == "step") return Pattern::kStep;
  return std::nullopt;
}

}  // namespace mtc::bench
