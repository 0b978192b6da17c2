// The pinned upload's process-wide settings and its last profile (pinned_upload.h): benchmarks
// and tests compare designs and ring shapes in one process with them; copies read them at each
// upload.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "detail/pinned_pool.h"
#include "detail/pinned_upload.h"
#include "detail/round_up.h"

namespace mtc::detail {
namespace {

std::atomic<int> upload_thread_limit{0};
std::atomic<int64_t> upload_slot_bytes_setting{0};
std::atomic<int> upload_slots_setting{0};
std::atomic<UploadQueuing> upload_queuing_setting{UploadQueuing::kAuto};
std::atomic<int64_t> upload_piece_setting{0};
std::atomic<int> upload_crew_setting{kUploadCrewByDefault};
std::atomic<bool> upload_profiling_setting{false};

std::mutex profile_mutex;
UploadProfile last_profile;

}  // namespace

void set_upload_threads(int threads) { upload_thread_limit.store(std::max(0, threads)); }
int upload_threads() { return upload_thread_limit.load(std::memory_order_relaxed); }

void set_upload_ring(int64_t slot_bytes, int slots) {
  upload_slot_bytes_setting.store(
      slot_bytes <= 0
          ? 0
          : round_up(std::max(slot_bytes, kUploadMinSlotBytes), PinnedPool::kGranularity));
  upload_slots_setting.store(std::max(0, slots));
}
int64_t upload_slot_bytes() { return upload_slot_bytes_setting.load(std::memory_order_relaxed); }
int64_t upload_slot_bytes_for(int64_t total) {
  const int64_t set = upload_slot_bytes();
  if (set > 0) return set;
  return total >= kUploadCrewBytes ? kUploadLargeChunkBytes : kUploadChunkBytes;
}
int upload_slots() {
  const int set = upload_slots_setting.load(std::memory_order_relaxed);
  return set > 0 ? set : kUploadSlots;
}

void set_upload_queuing(UploadQueuing queuing) { upload_queuing_setting.store(queuing); }
UploadQueuing upload_queuing() { return upload_queuing_setting.load(std::memory_order_relaxed); }

void set_upload_piece(int64_t bytes) {
  upload_piece_setting.store(
      bytes <= 0 ? 0 : round_up(std::max(bytes, kUploadMinPieceBytes), int64_t{4} << 10));
}
int64_t upload_piece_bytes() { return upload_piece_setting.load(std::memory_order_relaxed); }

void set_upload_crew(int threads) { upload_crew_setting.store(std::max(-1, threads)); }
int upload_crew_limit() { return upload_crew_setting.load(std::memory_order_relaxed); }
void reset_upload_settings() {
  set_upload_threads(0);
  set_upload_ring(0, 0);
  set_upload_queuing(UploadQueuing::kAuto);
  set_upload_piece(0);
  set_upload_crew(kUploadCrewByDefault);
}

void set_upload_profiling(bool on) { upload_profiling_setting.store(on); }
bool upload_profiling() { return upload_profiling_setting.load(std::memory_order_relaxed); }
UploadProfile last_upload_profile() {
  const std::lock_guard<std::mutex> lock(profile_mutex);
  return last_profile;
}
void record_upload_profile(const UploadProfile& profile) {
  const std::lock_guard<std::mutex> lock(profile_mutex);
  last_profile = profile;
}

}  // namespace mtc::detail
