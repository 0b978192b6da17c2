#include "runner/env/host_canary.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>

namespace mtc::bench {
namespace {

constexpr int kPairs = 528;
constexpr int kPasses = 3;
constexpr size_t kCopyBytes = 4096;

using Clock = std::chrono::steady_clock;

double microseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

double malloc_free_us() {
  std::array<void*, kPairs> blocks{};
  double best = 1e30;
  for (int pass = 0; pass < kPasses; ++pass) {
    const auto start = Clock::now();
    for (int i = 0; i < kPairs; ++i) {
      // Sizes of small tensors and their containers; the write keeps the compiler from eliding
      // the pair.
      blocks[static_cast<size_t>(i)] = std::malloc(static_cast<size_t>(64 + (i % 16) * 96));
      if (blocks[static_cast<size_t>(i)] != nullptr)
        *static_cast<volatile char*>(blocks[static_cast<size_t>(i)]) = 1;
    }
    for (void* b : blocks) std::free(b);
    best = std::min(best, microseconds_since(start));
  }
  return best;
}

struct Series {
  std::vector<double> values;
  nlohmann::json json() const {
    if (values.empty()) return nullptr;
    std::vector<double> v = values;
    std::sort(v.begin(), v.end());
    return {{"min", v.front()}, {"median", v[v.size() / 2]}, {"max", v.back()}};
  }
  bool changed() const {
    if (values.size() < 2) return false;
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    return *lo > 0.0 && *hi / *lo > kCanaryStateRatio;
  }
};

std::pair<Series, Series> series_of(const std::vector<CanaryRecord>& records) {
  Series malloc_free;
  Series h2d;
  for (const CanaryRecord& r : records) {
    malloc_free.values.push_back(r.reading.malloc_free_us);
    if (r.reading.h2d_4k_us) h2d.values.push_back(*r.reading.h2d_4k_us);
  }
  return {malloc_free, h2d};
}

}  // namespace

HostCanary::HostCanary(int device) : device_(device) {
  if (device_ < 0 || cudaSetDevice(device_) != cudaSuccess) {
    device_ = -1;
    return;
  }
  cudaStream_t stream = nullptr;
  if (cudaHostAlloc(&pinned_, kCopyBytes, cudaHostAllocDefault) != cudaSuccess ||
      cudaMalloc(&device_buffer_, kCopyBytes) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    device_ = -1;
  }
  stream_ = stream;
  cudaGetLastError();  // a failure above is handled (no copy), not left for the next caller
}

HostCanary::~HostCanary() {
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  if (device_buffer_ != nullptr) cudaFree(device_buffer_);
  if (pinned_ != nullptr) cudaFreeHost(pinned_);
}

CanaryReading HostCanary::read() {
  CanaryReading reading;
  reading.malloc_free_us = malloc_free_us();
  if (device_ < 0) return reading;
  auto stream = static_cast<cudaStream_t>(stream_);
  double best = 1e30;
  for (int pass = 0; pass < kPasses; ++pass) {
    const auto start = Clock::now();
    if (cudaMemcpyAsync(device_buffer_, pinned_, kCopyBytes, cudaMemcpyHostToDevice, stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess) {
      cudaGetLastError();
      return reading;
    }
    best = std::min(best, microseconds_since(start));
  }
  reading.h2d_4k_us = best;
  return reading;
}

nlohmann::json canary_json(const std::vector<CanaryRecord>& records) {
  nlohmann::json rounds = nlohmann::json::array();
  for (const CanaryRecord& r : records) {
    rounds.push_back({{"direction", r.direction},
                      {"pattern", r.pattern},
                      {"round", r.round},
                      {"process", r.process},
                      {"malloc_free_us", r.reading.malloc_free_us},
                      {"h2d_4k_us", r.reading.h2d_4k_us ? nlohmann::json(*r.reading.h2d_4k_us)
                                                        : nlohmann::json()}});
  }
  const auto [malloc_free, h2d] = series_of(records);
  return {{"rounds", std::move(rounds)},
          {"malloc_free_us", malloc_free.json()},
          {"h2d_4k_us", h2d.json()},
          {"state_ratio", kCanaryStateRatio},
          {"changed_state", malloc_free.changed() || h2d.changed()}};
}

std::vector<CanaryRecord> canary_records(const nlohmann::json& canary, int process) {
  std::vector<CanaryRecord> records;
  if (!canary.is_object() || !canary.contains("rounds") || !canary["rounds"].is_array())
    return records;
  for (const nlohmann::json& r : canary["rounds"]) {
    if (!r.is_object() || !r.contains("malloc_free_us") || !r["malloc_free_us"].is_number())
      continue;
    CanaryRecord record{r.value("direction", ""),
                        r.value("pattern", ""),
                        r.value("round", int64_t{0}),
                        {},
                        process};
    record.reading.malloc_free_us = r["malloc_free_us"].get<double>();
    if (r.contains("h2d_4k_us") && r["h2d_4k_us"].is_number())
      record.reading.h2d_4k_us = r["h2d_4k_us"].get<double>();
    records.push_back(std::move(record));
  }
  return records;
}

std::string canary_note(const std::vector<CanaryRecord>& records) {
  const auto [malloc_free, h2d] = series_of(records);
  std::string note;
  const auto describe = [&](const Series& s, const char* what) {
    if (!s.changed()) return;
    const auto [lo, hi] = std::minmax_element(s.values.begin(), s.values.end());
    note += fmt::format("{}{} {:.1f}-{:.1f} us", note.empty() ? "" : ", ", what, *lo, *hi);
  };
  describe(malloc_free, "528 malloc/free pairs");
  describe(h2d, "a 4 KiB pinned copy");
  if (note.empty()) return note;
  return fmt::format(
      "{} (host canary, per round: {}): absolute times of different rounds saw different hosts; "
      "ratios measured together hold better",
      kCanaryNotePrefix, note);
}

}  // namespace mtc::bench
