// Who fills a pageable upload's chunks (pinned_upload.h has the design): each thread queuing its
// own DMAs or one queuer, the pieces the fill threads take, the tasks for the copy's pool and for
// the crew. Apart from the upload's run, so that tests on a machine without a GPU can check it.
#pragma once

#include <cstdint>
#include <vector>

#include "detail/pinned_upload.h"
#include "detail/worker_pool.h"

namespace mtc::detail {

struct UploadPlan {
  bool one_queuer = false;
  int64_t piece_bytes = 0;     // what a fill thread takes at a time (a whole chunk: the slot size)
  int64_t items = 0;           // pieces in all
  int64_t helpers = 0;         // tasks for the copy's pool
  WorkerPool* crew = nullptr;  // asked only where crew_helpers > 0
  int64_t crew_helpers = 0;    // tasks for the crew
};

// The crew a plan may ask for help: the process's own (made on first use; null where the machine
// has no hardware threads to spare), or in tests one of their own.
using CrewSource = WorkerPool* (*)(const WorkerPool& pool);
WorkerPool* process_upload_crew(const WorkerPool& pool);

// The plan for `chunks` (of at most `slot_bytes` each, `total` bytes in all) with `pool` as the
// copy's pool, under the process's upload settings.
UploadPlan plan_upload(const std::vector<HostToDeviceSpan>& chunks, int64_t total,
                       int64_t slot_bytes, const WorkerPool& pool,
                       CrewSource crew_source = process_upload_crew);

// Adds to upload_crew_tasks(): the crew tasks an upload queued.
void count_crew_tasks(int64_t tasks);

}  // namespace mtc::detail
