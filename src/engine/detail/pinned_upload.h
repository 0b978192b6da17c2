// Large pageable host tensors to a GPU at pinned bandwidth. Their bytes are cut into chunks, each
// the size of a slot in a ring of pinned slots; several threads (the upload's own and pool workers
// that join as they wake) copy the chunks into free slots while the DMAs of earlier chunks run.
// One thread copying pageable memory alone reaches only a fraction of the link's bandwidth (about
// 9 GB/s on an H200 host against 55 for a pinned copy); nine about 60-70 GB/s.
//
// Two ways to share the driver's calls (upload_queuing): each thread queues the DMA of the chunk
// it filled; or the upload's own thread alone queues every DMA and watches the slots' events,
// while the others only fill. By default the second, with a crew of extra fill threads taking
// pieces of chunks, exactly for uploads large enough for the crew: on 64 x 4 MiB it moved 47.3
// GB/s, 86 % of a pinned copy, against 36.5 GB/s (66 %) with each thread queuing, in one run on an
// H200 host (results/h200/pageable-upload.md).
#pragma once

#include <c10/core/Device.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "detail/completion.h"

namespace mtc::detail {

// One host-to-device copy: pageable host bytes to device memory.
struct HostToDeviceSpan {
  std::byte* dst;
  const std::byte* src;
  int64_t bytes;
};

// Bytes of one chunk (and slot): large enough that a DMA runs near the link's bandwidth and its
// submission (~5 us) is small beside it (2 MiB take ~38 us at 55 GB/s). Each chunk's waits and
// calls cost some 20-26 us in all on an H200 host: 1 MiB slots were 0.71-0.73x as fast, 8 MiB
// ones 1.12x in one run, for four times the pinned memory (results/notes/2026-12-03-morning.md).
inline constexpr int64_t kUploadChunkBytes = 2 << 20;
// Bytes of one chunk in an upload of at least kUploadCrewBytes, where nine threads fill 256 KiB
// pieces faster than the ring of 2 MiB slots drains: on 64 x 4 MiB, 4 MiB chunks (and slots) ran
// at 86 % of a pinned copy against 81 % with 2 MiB ones, the queuer 0.8 against 3.1 ms busy with
// the driver, in one run on an H200 host (results/notes/2026-12-03-afternoon.md); 85-87 % in
// three earlier runs. The ring holds 32 MiB then.
inline constexpr int64_t kUploadLargeChunkBytes = 4 << 20;
// Slots in the ring: more than the threads that fill them, so DMAs queue behind the fills.
inline constexpr int kUploadSlots = 8;
// Smallest slot the ring shrinks to when the pinned pool's limit leaves no room for more.
inline constexpr int64_t kUploadMinSlotBytes = 256 << 10;
// Below this many bytes in all, one thread does it all: waking helpers costs more than it saves.
inline constexpr int64_t kUploadParallelBytes = 1 << 20;

// The most threads that fill chunks of one upload: the calling one and pool workers. Process-wide,
// for benchmarks that compare thread counts in one run; 0 (the default): the calling thread and
// every worker, and the crew beside them where it joins (a limit set holds the crew too).
void set_upload_threads(int threads);
int upload_threads();

// The ring's slot size and slot count, process-wide, for benchmarks that compare ring shapes in
// one run (BM_LargePageableToDevice; results/notes/2026-12-03-morning.md); 0 (the default) for
// either: the slot size of upload_slot_bytes_for() and kUploadSlots. A slot size is rounded up to
// the pinned pool's granularity and to at least kUploadMinSlotBytes; upload_slot_bytes() is 0 for
// the default.
void set_upload_ring(int64_t slot_bytes, int slots);
int64_t upload_slot_bytes();
int upload_slots();
// The slot size of an upload of `total` bytes: the one set, or by default kUploadChunkBytes, and
// kUploadLargeChunkBytes from kUploadCrewBytes on.
int64_t upload_slot_bytes_for(int64_t total);

// Who calls the driver: kEachThread, each filling thread waits for its slot's event and queues
// its chunk's DMA; kOneQueuer, the upload's own thread alone queues every DMA and watches the
// slots' events, while the others only fill; kAuto (the default), one queuer exactly where the
// crew joins (a large upload, threads to spare), each thread elsewhere. Without the crew, one
// queuer gained little or lost: 1.04-1.23x as fast on 64 x 4 MiB, 0.95-1.14x the time on the
// mixed batch, over three runs. Process-wide, for benchmarks that compare them in one run.
enum class UploadQueuing { kAuto, kEachThread, kOneQueuer };
void set_upload_queuing(UploadQueuing queuing);
UploadQueuing upload_queuing();

// With one queuer, the bytes a fill thread takes at a time. By default, where the crew joins,
// pieces of kUploadPieceBytes: nine threads then fill the oldest chunks together and each chunk's
// DMA starts soon after its slot is free, where nine threads that each fill a whole 2 MiB chunk
// fill eight slots at once and then wait together for the DMAs (30 % of their time waiting for a
// slot against 11 %). Without the crew, whole chunks: five threads filling pieces waited for
// nothing, yet copied at 4.2 GB/s each against 6.1 for whole chunks (19.3 against 27.4 GB/s in
// all, one run, results/notes/2026-12-03-late-morning.md). Process-wide, for benchmarks: 0 (or
// less) the default; a piece larger than a chunk is the whole chunk. Rounded up to 4 KiB and to at
// least kUploadMinPieceBytes; upload_piece_bytes() is 0 for the default.
inline constexpr int64_t kUploadPieceBytes = 256 << 10;
inline constexpr int64_t kUploadMinPieceBytes = 64 << 10;
void set_upload_piece(int64_t bytes);
int64_t upload_piece_bytes();

// With one queuer, an upload of at least kUploadCrewBytes also takes up to kUploadCrewMax threads
// of a crew that only fills, beside the copy's workers, where the machine has hardware threads to
// spare. How many, process-wide, for benchmarks: 0 none, -1 (the default) as many as the crew has.
// With one queuer the fill threads are the upload's limit (nine fill at 59-74 GB/s on an H200 host,
// five at 40-46): with pieces of 256 KiB the crew took 64 x 4 MiB from 23.2 to 46.0 GB/s, 84 % of
// a pinned copy (results/notes/2026-12-03-late-morning.md).
inline constexpr int kUploadCrewMax = 4;
inline constexpr int64_t kUploadCrewBytes = int64_t{16} << 20;
inline constexpr int kUploadCrewByDefault = -1;
void set_upload_crew(int threads);
int upload_crew_limit();
// The crew's threads: 0 until an upload made it, or where the machine has none to spare.
int upload_crew_threads();
// Crew tasks queued so far (one per crew thread an upload asked for), for tests.
int64_t upload_crew_tasks();

// Every setting above back to its default: for benchmarks and tests that change them.
void reset_upload_settings();

// Where the threads of one upload spent their time, for benchmarks that ask why an upload is
// slower than its threads could fill (set_upload_profiling; off by default, when uploads read no
// clock). Times summed over the threads, in microseconds.
struct UploadProfile {
  double wall_us = 0;         // the upload's own share, up to the last helper's last piece
  int fill_threads = 0;       // threads that filled at least one piece (the upload's own too)
  int64_t pieces = 0;         // pieces (or chunks, each thread queuing) filled
  double fill_us = 0;         // copying into the ring
  double slot_wait_us = 0;    // waiting for a slot to be free again (a DMA to run)
  double queuer_pump_us = 0;  // one queuer: queuing DMAs and asking for slots' events
  double queuer_idle_us = 0;  // one queuer: nothing to fill or queue
};
void set_upload_profiling(bool on);
bool upload_profiling();
// The last profiled upload's profile (all zero before one).
UploadProfile last_upload_profile();
void record_upload_profile(const UploadProfile& profile);

// Queues the copy of every span on `stream`, whose device must be current; the pinned ring goes
// to `completion`, which must be waited for before the ring is reused. Returns the pinned bytes
// used. Throws c10::Error on CUDA errors and when the pinned pool's limit leaves no room for even
// one small slot; DMAs queued before a failure may still read the ring (held by `completion`).
int64_t upload_pageable(std::span<const HostToDeviceSpan> spans, Completion& completion,
                        c10::DeviceIndex device, cudaStream_t stream);

}  // namespace mtc::detail
