// The benchmark's vocabulary: the names that several folders speak (copy directions, sample
// patterns, the report's schema version and status names, the baseline strategy), in one leaf
// header that includes nothing of the project, so that no folder includes another for them
// (as Google Benchmark keeps its in include/benchmark/types.h). Header-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mtc::bench {

// The four copy directions the benchmark measures.
enum class Direction {
  kH2D,  // CPU leaves (as the workload builds them) -> cuda:D
  kD2H,  // the workload moved to cuda:D beforehand (untimed) -> CPU
  kD2D,  // the workload on cuda:D -> another GPU; needs two: with one the engine would return
         // every leaf as it is (refused when named outright, skipped from a config or `all`)
  kH2H,  // CPU -> CPU: new containers, leaves as they are; the only direction without a GPU
};

inline std::string_view to_string(Direction direction) {
  switch (direction) {
    case Direction::kH2D:
      return "h2d";
    case Direction::kD2H:
      return "d2h";
    case Direction::kD2D:
      return "d2d";
    case Direction::kH2H:
      return "h2h";
  }
  return "h2d";
}

// Every direction, in report order.
inline std::vector<Direction> all_directions() {
  return {Direction::kH2D, Direction::kD2H, Direction::kD2D, Direction::kH2H};
}

inline std::optional<Direction> parse_direction(std::string_view text) {
  for (const Direction d : all_directions()) {
    if (text == to_string(d)) return d;
  }
  return std::nullopt;
}

// How samples follow each other.
//   hot   the same input copied back to back; the output is released after the clock stops.
//         What a micro-benchmark measures: caches, allocators and workers are warm.
//   step  what a training step does: a new input each sample from a rotation of K inputs
//         (built with successive seeds), an idle gap before each sample in which the caller
//         sleeps and nothing is copied, and the previous output released on the caller's
//         thread inside the sample, as `batch = copy(next)` does.
//   step-busy  the same step, but the caller stays busy through the gap, touching a buffer
//         larger than the last-level cache (its forward pass): the CPU stays awake and the
//         caches hold other data (runner/measure/gap.h).
enum class Pattern { kHot, kStep, kStepBusy };

inline std::string_view to_string(Pattern pattern) {
  switch (pattern) {
    case Pattern::kHot:
      return "hot";
    case Pattern::kStep:
      return "step";
    case Pattern::kStepBusy:
      return "step-busy";
  }
  return "?";
}

inline std::optional<Pattern> parse_pattern(std::string_view name) {
  if (name == "hot") return Pattern::kHot;
  if (name == "step") return Pattern::kStep;
  if (name == "step-busy") return Pattern::kStepBusy;
  return std::nullopt;
}

// Whether a pattern is a training step (a rotation of inputs, a gap, the previous output freed
// inside the sample), whatever its caller does in the gap.
inline bool is_step(Pattern pattern) { return pattern != Pattern::kHot; }

// The JSON report's schema version (docs/report.md). Bumped on every change a reader could trip
// over (renamed or retyped fields); adding fields is not such a change: readers ignore fields
// they do not know.
inline constexpr int kReportSchemaVersion = 2;

// What became of a case, as the report names it.
enum class EntryStatus {
  kOk,
  kSkipped,             // the strategy does not apply to this direction or machine
  kFailed,              // a runtime or CUDA error while running it
  kVerificationFailed,  // its output differs from its input
};

inline std::string_view to_string(EntryStatus status) {
  switch (status) {
    case EntryStatus::kOk:
      return "ok";
    case EntryStatus::kSkipped:
      return "skipped";
    case EntryStatus::kFailed:
      return "failed";
    case EntryStatus::kVerificationFailed:
      return "verification_failed";
  }
  return "failed";
}

// The inverse of to_string; empty for text that names no status.
inline std::optional<EntryStatus> parse_entry_status(std::string_view text) {
  for (const EntryStatus status : {EntryStatus::kOk, EntryStatus::kSkipped, EntryStatus::kFailed,
                                   EntryStatus::kVerificationFailed}) {
    if (to_string(status) == text) return status;
  }
  return std::nullopt;
}

// One side of one round of an interleaved A/B job: what `--ab-label JOB:SIDE:ROUND` gives a run
// and the report's "ab" object keeps, for `compare` to pair the sides by round.
struct AbLabel {
  std::string job;
  std::string side;
  int64_t round = 0;
};

// The strategy every speedup is measured against (per-tensor `.to()`): the report's
// speedup_vs_to.
inline constexpr std::string_view kBaselineStrategy = "to";

}  // namespace mtc::bench
