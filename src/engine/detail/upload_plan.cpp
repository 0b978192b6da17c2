// Who fills a pageable upload's chunks (upload_plan.h).
#include "detail/upload_plan.h"

#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace mtc::detail {
namespace {

std::atomic<int> crew_threads{0};
std::atomic<int64_t> crew_tasks{0};

}  // namespace

// Threads that only fill chunks of large uploads with one queuer, beside the copy's worker pool:
// a few pool workers fill pageable memory at well under the link's bandwidth (about 9 GB/s each
// on an H200 host, where nine threads fill at 68 GB/s). As many as the hardware threads left to
// this process's share of the device, up to kUploadCrewMax; made on first use, and they sleep
// when idle: waking them costs tens of microseconds, small beside an upload of kUploadCrewBytes.
WorkerPool* process_upload_crew(const WorkerPool& pool) {
  static WorkerPool* const crew = [&pool]() -> WorkerPool* {
    const int hardware = static_cast<int>(std::thread::hardware_concurrency());
    const int devices = std::max<int>(c10::cuda::device_count(), 1);
    const int spare = hardware / devices - pool.size() - 1;
    const int size = std::clamp(spare, 0, kUploadCrewMax);
    crew_threads.store(size);
    return size > 0 ? new WorkerPool(size, std::chrono::microseconds(0), /*anticipate=*/false)
                    : nullptr;
  }();
  return crew;
}

int upload_crew_threads() { return crew_threads.load(std::memory_order_relaxed); }
int64_t upload_crew_tasks() { return crew_tasks.load(std::memory_order_relaxed); }
void count_crew_tasks(int64_t tasks) { crew_tasks.fetch_add(tasks, std::memory_order_relaxed); }

namespace {

// The most threads that may fill, the crew apart (set_upload_threads).
int fill_thread_limit(const WorkerPool& pool) {
  return upload_threads() > 0 ? upload_threads() : pool.size() + 1;
}

// Whole chunks (or `piece_bytes`), the copy's pool only.
UploadPlan plan_helpers(const std::vector<HostToDeviceSpan>& chunks, int64_t total,
                        int64_t piece_bytes, const WorkerPool& pool) {
  UploadPlan plan;
  plan.piece_bytes = piece_bytes;
  for (const HostToDeviceSpan& c : chunks) plan.items += (c.bytes + piece_bytes - 1) / piece_bytes;
  if (total >= kUploadParallelBytes)
    plan.helpers = std::min<int64_t>({fill_thread_limit(pool) - 1, pool.size(), plan.items - 1});
  return plan;
}

// One queuer: pieces of the size set, or by default kUploadPieceBytes where the crew joins and
// whole chunks where not. The crew joins only where nobody but the upload's own thread calls the
// driver; a thread limit set for a benchmark holds the crew too, the default (every thread) not.
UploadPlan plan_one_queuer(const std::vector<HostToDeviceSpan>& chunks, int64_t total,
                           int64_t slot_bytes, const WorkerPool& pool, CrewSource crew_source) {
  const int64_t piece_set = upload_piece_bytes();
  UploadPlan plan = plan_helpers(
      chunks, total, std::min(slot_bytes, piece_set > 0 ? piece_set : kUploadPieceBytes), pool);
  const int crew_limit = upload_crew_limit() < 0 ? kUploadCrewMax : upload_crew_limit();
  if (crew_limit > 0 && total >= kUploadCrewBytes && plan.helpers > 0) {
    const int64_t room = std::min<int64_t>(
        upload_threads() > 0 ? fill_thread_limit(pool) - 1 - plan.helpers : kUploadCrewMax,
        plan.items - 1 - plan.helpers);
    if (room > 0) {
      plan.crew = crew_source(pool);
      if (plan.crew != nullptr)
        plan.crew_helpers = std::min<int64_t>({crew_limit, plan.crew->size(), room});
    }
  }
  if (plan.crew_helpers == 0 && piece_set <= 0)
    plan = plan_helpers(chunks, total, slot_bytes, pool);
  plan.one_queuer = true;
  return plan;
}

}  // namespace

UploadPlan plan_upload(const std::vector<HostToDeviceSpan>& chunks, int64_t total,
                       int64_t slot_bytes, const WorkerPool& pool, CrewSource crew_source) {
  const UploadQueuing queuing = upload_queuing();
  if (queuing != UploadQueuing::kEachThread) {
    UploadPlan plan = plan_one_queuer(chunks, total, slot_bytes, pool, crew_source);
    // By default one queuer exactly where the crew joins (see upload_queuing).
    if (queuing == UploadQueuing::kOneQueuer || plan.crew_helpers > 0) return plan;
  }
  return plan_helpers(chunks, total, slot_bytes, pool);
}

}  // namespace mtc::detail
