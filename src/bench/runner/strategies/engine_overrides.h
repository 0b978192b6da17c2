// The command line's overrides of the engine's five CopyOptions. Pure, so the command line and
// the plan need no ATen; engine.h turns them into mtc::CopyOptions.
#pragma once

#include <cstdint>
#include <optional>

namespace mtc::bench {

struct EngineOverrides {
  std::optional<bool> pinned_staging;
  std::optional<bool> pack;
  std::optional<int64_t> alignment_bytes;
  std::optional<int64_t> max_chunk_bytes;
  std::optional<bool> background_thread;
};

// mtc::CopyOptions{}'s five, for --help. Defined beside engine_options (engine.cpp), where the
// engine's header, and ATen with it, is already included.
EngineOverrides engine_defaults();

// The largest alignment_bytes the engine takes (mtc::kMaxPackedAlignmentBytes), so that the
// command line refuses a larger one as a usage error rather than the copy failing at run time.
int64_t engine_max_alignment_bytes();

}  // namespace mtc::bench
