#include "runner/measure/direction.h"

namespace mtc::bench {

std::string_view to_string(Direction direction) {
  switch (direction) {
    case Direction::kH2D: return "h2d";
    case Direction::kD2H: return "d2h";
    case Direction::kD2D: return "d2d";
    case Direction::kH2H: return "h2h";
  }
  return "h2d";
}

std::optional<Direction> parse_direction(std::string_view text) {
  for (Direction d : all_directions()) {
    if (text == to_string(d)) return d;
  }
  return std::nullopt;
}

std::vector<Direction> all_directions() {
  return {Direction::kH2D, Direction::kD2H, Direction::kD2D, Direction::kH2H};
}

}  // namespace mtc::bench
