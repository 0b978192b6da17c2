// The pinned upload (pinned_upload.h): the ring and the chunks; upload_plan.cpp says who fills
// them, upload_job.cpp runs it.
#include "detail/pinned_upload.h"

#include <algorithm>
#include <vector>

#include "detail/pinned_pool_set.h"
#include "detail/round_up.h"
#include "detail/upload_job.h"
#include "detail/upload_plan.h"
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

}  // namespace

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
  int64_t slot_bytes =
      round_up(std::min(upload_slot_bytes_for(total), largest), PinnedPool::kGranularity);
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
  WorkerPool& pool = current_worker_pool();
  const UploadPlan plan = plan_upload(chunks, total, slot_bytes, pool);
  run_upload(std::move(chunks), ring.data, slots, slot_bytes, device, stream, plan, pool);
  return ring.bytes;
}

}  // namespace mtc::detail
