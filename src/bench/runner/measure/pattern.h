// How samples follow each other.
//   hot   the same input copied back to back; the output is released after the clock stops.
//         What a micro-benchmark measures: caches, allocators and workers are warm.
//   step  what a training step does: a new input each sample from a rotation of K inputs
//         (built with successive seeds), an idle gap before each sample in which the caller
//         sleeps and nothing is copied, and the previous output released on the caller's
//         thread inside the sample, as `batch = copy(next)` does.
#pragma once

#include <optional>
#include <string_view>

namespace mtc::bench {

enum class Pattern { kHot, kStep };

std::string_view to_string(Pattern pattern);
std::optional<Pattern> parse_pattern(std::string_view name);

}  // namespace mtc::bench
