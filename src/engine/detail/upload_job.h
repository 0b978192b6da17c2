// One pageable upload's run (pinned_upload.h has the design): the threads that fill its chunks
// into the pinned ring, the DMAs and the slots' events. upload_pageable() plans it: the chunks,
// the ring, how many helpers of the copy's pool and of the crew may join.
#pragma once

#include <c10/core/Device.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "detail/pinned_upload.h"
#include "detail/upload_plan.h"
#include "detail/worker_pool.h"

namespace mtc::detail {

// Fills `chunks` through the ring's `slots` slots of `slot_bytes` and queues their DMAs on
// `stream` (the device current), as `plan` says: its design, its pieces, its helpers' tasks on
// `pool` and on its crew (counted in upload_crew_tasks()). Returns once every DMA is queued and
// no helper is filling; throws the first failure, with no helper left waiting (DMAs queued before
// it may still read the ring).
void run_upload(std::vector<HostToDeviceSpan> chunks, std::byte* ring, int slots,
                int64_t slot_bytes, c10::DeviceIndex device, cudaStream_t stream,
                const UploadPlan& plan, WorkerPool& pool);

}  // namespace mtc::detail
