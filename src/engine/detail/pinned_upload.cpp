// The pinned upload's plan (pinned_upload.h): the chunks, the ring, the threads that may help and
// the crew; upload_job.cpp runs it.
#include "detail/pinned_upload.h"

#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "detail/pinned_pool_set.h"
#include "detail/round_up.h"
#include "detail/upload_job.h"
#include "detail/worker_pool_set.h"
#include "mtc/nvtx.h"

namespace mtc::detail {
namespace {

// As many slots of as many bytes as the pinned pool's limit allows: first fewer slots (down to
// two, which still overlap a fill with a DMA), then smaller ones, then a single one.
PinnedBlock acquire_ring(PinnedPool& pool, int& slots, int64_t& slot_bytes) {
  while (true) {
    if (slots == 1 && slot_bytes <= kUploadMinSlotBytes) return pool.acquire(slot_bytes);
    if (PinnedBlock ring = pool.try_acquire(slots * slot_bytes)) return ring;
    if (slots > 2) {
      slots /= 2;
    } else if (slot_bytes > kUploadMinSlotBytes) {
      slot_bytes = std::max(kUploadMinSlotBytes, slot_bytes / 2);
    } else {
      slots = 1;
    }
  }
}

// Threads that only fill chunks of large uploads with one queuer, beside the copy's worker pool:
// a few pool workers fill pageable memory at well under the link's bandwidth (about 9 GB/s each
// on an H200 host, where nine threads fill at 68 GB/s). As many as the hardware threads left to
// this process's share of the device, up to kUploadCrewMax; made on first use, and they sleep
// when idle: waking them costs tens of microseconds, small beside an upload of kUploadCrewBytes.
std::atomic<int> crew_threads{0};
std::atomic<int64_t> crew_tasks{0};

WorkerPool* upload_crew(const WorkerPool& pool) {
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

// Who fills an upload's chunks, and in what pieces.
struct ThreadPlan {
  int64_t piece_bytes = 0;
  int64_t items = 0;    // pieces in all
  int64_t helpers = 0;  // tasks for the copy's pool
  WorkerPool* crew = nullptr;
  int64_t crew_helpers = 0;  // tasks for the crew
};

int upload_thread_limit(const WorkerPool& pool) {
  return upload_threads() > 0 ? upload_threads() : pool.size() + 1;
}

// Whole chunks (or `piece_bytes`), the copy's pool only.
ThreadPlan plan_helpers(const std::vector<HostToDeviceSpan>& chunks, int64_t total,
                        int64_t piece_bytes, const WorkerPool& pool) {
  ThreadPlan plan;
  plan.piece_bytes = piece_bytes;
  for (const HostToDeviceSpan& c : chunks) plan.items += (c.bytes + piece_bytes - 1) / piece_bytes;
  if (total >= kUploadParallelBytes)
    plan.helpers = std::min<int64_t>({upload_thread_limit(pool) - 1, pool.size(), plan.items - 1});
  return plan;
}

// One queuer: pieces of the size set, or by default kUploadPieceBytes where the crew joins and
// whole chunks where not. The crew joins only where nobody but the upload's own thread calls the
// driver; a thread limit set for a benchmark holds the crew too, the default (every thread) not.
ThreadPlan plan_one_queuer(const std::vector<HostToDeviceSpan>& chunks, int64_t total,
                           int64_t slot_bytes, WorkerPool& pool) {
  const int64_t piece_set = upload_piece_bytes();
  ThreadPlan plan = plan_helpers(
      chunks, total, std::min(slot_bytes, piece_set > 0 ? piece_set : kUploadPieceBytes), pool);
  const int crew_limit = upload_crew_limit() < 0 ? kUploadCrewMax : upload_crew_limit();
  if (crew_limit > 0 && total >= kUploadCrewBytes && plan.helpers > 0) {
    const int64_t room = std::min<int64_t>(
        upload_threads() > 0 ? upload_thread_limit(pool) - 1 - plan.helpers : kUploadCrewMax,
        plan.items - 1 - plan.helpers);
    if (room > 0) {
      plan.crew = upload_crew(pool);
      if (plan.crew != nullptr)
        plan.crew_helpers = std::min<int64_t>({crew_limit, plan.crew->size(), room});
    }
  }
  if (plan.crew_helpers == 0 && piece_set <= 0) {
    plan = plan_helpers(chunks, total, slot_bytes, pool);
  }
  return plan;
}

}  // namespace

int upload_crew_threads() { return crew_threads.load(std::memory_order_relaxed); }
int64_t upload_crew_tasks() { return crew_tasks.load(std::memory_order_relaxed); }

int64_t upload_pageable(std::span<const HostToDeviceSpan> spans, Completion& completion,
                        c10::DeviceIndex device, cudaStream_t stream) {
  MTC_RANGE(upload, "upload");
  int64_t total = 0;
  int64_t largest = 0;
  for (const HostToDeviceSpan& s : spans) {
    total += s.bytes;
    largest = std::max(largest, s.bytes);
  }
  if (total == 0) return 0;
  int64_t slot_bytes = round_up(std::min(upload_slot_bytes(), largest), PinnedPool::kGranularity);
  int64_t chunk_count = 0;
  for (const HostToDeviceSpan& s : spans) chunk_count += (s.bytes + slot_bytes - 1) / slot_bytes;
  int slots = static_cast<int>(std::min<int64_t>(upload_slots(), chunk_count));
  const PinnedBlock ring =
      acquire_ring(PinnedPoolSet::instance().for_device(device), slots, slot_bytes);
  completion.hold(ring);

  std::vector<HostToDeviceSpan> chunks;
  for (const HostToDeviceSpan& s : spans) {
    for (int64_t done = 0; done < s.bytes; done += slot_bytes)
      chunks.push_back({s.dst + done, s.src + done, std::min(slot_bytes, s.bytes - done)});
  }
  const UploadQueuing queuing = upload_queuing();
  WorkerPool& pool = current_worker_pool();
  ThreadPlan plan;
  if (queuing != UploadQueuing::kEachThread)
    plan = plan_one_queuer(chunks, total, slot_bytes, pool);
  // By default one queuer exactly where the crew joins (see upload_queuing).
  const bool one_queuer = queuing == UploadQueuing::kOneQueuer ||
                          (queuing == UploadQueuing::kAuto && plan.crew_helpers > 0);
  if (!one_queuer) plan = plan_helpers(chunks, total, slot_bytes, pool);
  const int64_t crew_helpers = plan.crew_helpers;
  if (crew_helpers > 0) crew_tasks.fetch_add(crew_helpers, std::memory_order_relaxed);
  run_upload(std::move(chunks), ring.data, slots, slot_bytes, device, stream, one_queuer,
             plan.piece_bytes, pool, static_cast<int>(plan.helpers), plan.crew,
             static_cast<int>(crew_helpers));
  return ring.bytes;
}

}  // namespace mtc::detail
