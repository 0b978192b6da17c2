// The four copy directions the benchmark measures.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace mtc::bench {

enum class Direction {
  kH2D,  // CPU leaves (as the workload builds them) -> cuda:D
  kD2H,  // the workload moved to cuda:D beforehand (untimed) -> CPU
  kD2D,  // the workload on cuda:D -> another GPU; skipped with one GPU, where the engine
         // would return every leaf as it is and there is nothing to measure
  kH2H,  // CPU -> CPU: new containers, leaves as they are; the only direction without a GPU
};

std::string_view to_string(Direction direction);
std::optional<Direction> parse_direction(std::string_view text);
// Every direction, in report order.
std::vector<Direction> all_directions();

}  // namespace mtc::bench
