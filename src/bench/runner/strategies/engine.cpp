#include "runner/strategies/engine.h"

#include <utility>

#include "runner/env/environment.h"

namespace mtc::bench {

EngineStrategy::EngineStrategy(std::string name, mtc::CopyOptions options,
                               std::shared_ptr<const LoadedEngine> loaded)
    : name_(std::move(name)), options_(options), loaded_(std::move(loaded)) {}

void EngineStrategy::start(const c10::IValue& input) {
  if (loaded_) {
    loaded_copy_ = loaded_->start_copy(input, target_, options_);
  } else {
    handle_ = mtc::start_copy(input, target_, options_);
  }
}

c10::IValue EngineStrategy::finish() {
  // Moved out so the handle is released inside the timed region: releasing it is part of what
  // a user of the engine pays.
  if (loaded_) {
    LoadedEngine::Copy copy = std::move(loaded_copy_);
    c10::IValue output = loaded_->get(copy);
    stats_ = loaded_->stats(copy);
    return output;
  }
  mtc::CopyHandle handle = std::move(handle_);
  c10::IValue output = handle.get();
  stats_ = handle.stats();
  return output;
}

mtc::PinnedPoolStats EngineStrategy::pinned_pool_stats() const {
  return loaded_ ? loaded_->pinned_pool_stats() : mtc::pinned_pool_stats();
}

std::string EngineStrategy::revision() const {
  return loaded_ ? loaded_->revision() : build_revision();
}

mtc::CopyOptions engine_options(const EngineOverrides& overrides) {
  mtc::CopyOptions o;
  if (overrides.pinned_staging) o.use_pinned_staging = *overrides.pinned_staging;
  if (overrides.pack) o.pack_cpu_tensors = *overrides.pack;
  if (overrides.alignment_bytes) o.min_packed_alignment_bytes = *overrides.alignment_bytes;
  if (overrides.max_chunk_bytes) o.max_packed_chunk_bytes = *overrides.max_chunk_bytes;
  if (overrides.background_thread) o.use_background_thread = *overrides.background_thread;
  return o;
}

EngineOverrides engine_defaults() {
  const mtc::CopyOptions o;
  return {o.use_pinned_staging, o.pack_cpu_tensors, o.min_packed_alignment_bytes,
          o.max_packed_chunk_bytes, o.use_background_thread};
}

int64_t engine_max_alignment_bytes() { return mtc::kMaxPackedAlignmentBytes; }

nlohmann::json copy_options_json(const mtc::CopyOptions& o) {
  return nlohmann::json{{"use_pinned_staging", o.use_pinned_staging},
                        {"pack_cpu_tensors", o.pack_cpu_tensors},
                        {"min_packed_alignment_bytes", o.min_packed_alignment_bytes},
                        {"max_packed_chunk_bytes", o.max_packed_chunk_bytes},
                        {"use_background_thread", o.use_background_thread},
                        {"pinned_host_outputs", o.pinned_host_outputs}};
}

}  // namespace mtc::bench
