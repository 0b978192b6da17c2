// A tiny fixed probe of the host, read before every round of every block: 528 malloc/free pairs
// (the allocator and caches the engine's walk leans on: one pair per tensor of the reference
// batch) and, with a GPU, one 4 KiB host-to-device copy from pinned memory (a launch and a DMA
// round trip). The GPU host's CPUs switch between a fast and a slow state within seconds, each on
// its own (~20 us or 27-30 us for the 528 pairs, measured 2026-11-23 on a 2 x H200 host): the
// canary says which state each round saw, so a user who sees absolute times move between runs
// sees why. It costs ~0.2 ms a round. No ATen: the CUDA runtime only.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mtc::bench {

struct CanaryReading {
  double malloc_free_us = 0.0;      // the fastest of 3 passes over 528 pairs
  std::optional<double> h2d_4k_us;  // the fastest of 3 copies; none without a GPU
};

class HostCanary {
 public:
  // device: the GPU to copy to, -1 for none. Allocates its buffers once; if that fails the
  // canary reads malloc/free only.
  explicit HostCanary(int device);
  ~HostCanary();
  HostCanary(const HostCanary&) = delete;  // owns pinned and device memory and a stream
  HostCanary& operator=(const HostCanary&) = delete;

  CanaryReading read();

 private:
  int device_;
  void* pinned_ = nullptr;
  void* device_buffer_ = nullptr;
  void* stream_ = nullptr;  // cudaStream_t, kept opaque so the header needs no CUDA
};

// One reading and where it was taken.
struct CanaryRecord {
  std::string direction;
  std::string pattern;
  int64_t round = 0;
  CanaryReading reading;
  int process = 0;  // which of --processes N read it
};

// A series changed state when its slowest round took more than this times its fastest: the
// two states of the 528 pairs differ by 1.35-1.5x, a reading's own jitter by a few percent.
inline constexpr double kCanaryStateRatio = 1.25;

// {"rounds": [{direction, pattern, round, process, malloc_free_us, h2d_4k_us}], "malloc_free_us"
// and "h2d_4k_us": {min, median, max} or null, "state_ratio", "changed_state": bool}.
nlohmann::json canary_json(const std::vector<CanaryRecord>& records);
// The records of canary_json's "rounds" (a child process's report), labelled `process`;
// malformed items are skipped.
std::vector<CanaryRecord> canary_records(const nlohmann::json& canary, int process);
// A note for the report when a series changed state; empty when none did. It starts with
// kCanaryNotePrefix.
inline constexpr std::string_view kCanaryNotePrefix = "the host changed state during the run";
std::string canary_note(const std::vector<CanaryRecord>& records);

}  // namespace mtc::bench
