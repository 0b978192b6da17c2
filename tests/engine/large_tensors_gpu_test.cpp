// Large tensors. To a GPU, pageable ones go through the parallel pinned upload
// (pinned_upload.h): bitwise the same as per-tensor .to(), with any number of filling threads,
// with more chunks than ring slots, beside packed small tensors, and from non-dense and pinned
// sources. Back to the host, optionally straight into pinned outputs. Skipped without a CUDA
// device (but for the settings test).
#include <ATen/core/List.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "detail/cuda_fault.h"
#include "detail/pinned_upload.h"
#include "gpu_test_support.h"
#include "mtc/copier.h"
#include "structure_compare.h"
#include "watchdog.h"

namespace {

using mtc::CopyHandle;
using mtc::CopyOptions;
using mtc::start_copy;
using mtc::test::bytes_of;
using mtc::test::expect_structure_copy;
using mtc::test::GpuTest;
using mtc::test::kCpu;
using mtc::test::kCuda0;
using mtc::test::kKiB;
using mtc::test::kMiB;
using mtc::test::random_tensor;
using mtc::test::reference_batch;
using mtc::test::tensors_of;
using mtc::test::to_device;

// The upload's designs: each filling thread queues its DMAs; one queuer, its fill threads taking
// pieces of chunks (a piece of 64 KiB, the smallest, so that a 2 MiB chunk is 32 pieces); one
// queuer, whole chunks; one queuer with pieces and the crew; the defaults.
enum class Design { kEachQueues, kOneQueuer, kOneQueuerWholeChunks, kOneQueuerAndCrew, kDefaults };

// Sets the upload's thread limit and design for one test, and puts the defaults back.
class ScopedUploadThreads {
 public:
  explicit ScopedUploadThreads(int threads, Design design = Design::kEachQueues) {
    mtc::detail::set_upload_threads(threads);
    if (design == Design::kDefaults) return;
    mtc::detail::set_upload_queuing(design == Design::kEachQueues
                                        ? mtc::detail::UploadQueuing::kEachThread
                                        : mtc::detail::UploadQueuing::kOneQueuer);
    mtc::detail::set_upload_piece(design == Design::kOneQueuerWholeChunks
                                      ? int64_t{1} << 40
                                      : mtc::detail::kUploadMinPieceBytes);
    mtc::detail::set_upload_crew(design == Design::kOneQueuerAndCrew ? -1 : 0);
  }
  ScopedUploadThreads(const ScopedUploadThreads&) = delete;  // restores once
  ScopedUploadThreads& operator=(const ScopedUploadThreads&) = delete;
  ~ScopedUploadThreads() { mtc::detail::reset_upload_settings(); }
};

// Sets the upload ring's shape for one scope and puts the default back.
class ScopedUploadRing {
 public:
  ScopedUploadRing(int64_t slot_bytes, int slots) {
    mtc::detail::set_upload_ring(slot_bytes, slots);
  }
  ScopedUploadRing(const ScopedUploadRing&) = delete;  // restores once
  ScopedUploadRing& operator=(const ScopedUploadRing&) = delete;
  ~ScopedUploadRing() { mtc::detail::set_upload_ring(0, 0); }
};

// Sizes around the chunk and slot boundaries (this batch, above kUploadCrewBytes, is cut into
// kUploadLargeChunkBytes; smaller uploads into kUploadChunkBytes), more chunks than the ring has
// slots, odd lengths, a non-dense view and a pinned tensor (copied without staging) among them.
c10::impl::GenericList large_pageable_batch() {
  c10::impl::GenericList batch(c10::AnyType::get());
  for (int i = 0; i < 12; ++i) batch.push_back(random_tensor(at::kFloat, {kMiB}));  // 4 MiB each
  batch.push_back(random_tensor(at::kByte, {mtc::detail::kUploadChunkBytes + 3}));
  batch.push_back(random_tensor(at::kByte, {mtc::detail::kUploadChunkBytes - 1}));
  batch.push_back(random_tensor(at::kByte, {mtc::detail::kUploadLargeChunkBytes + 5}));
  batch.push_back(random_tensor(at::kDouble, {300 * kKiB / 8 + 1}));
  batch.push_back(random_tensor(at::kHalf, {5 * kMiB + 7}));
  batch.push_back(random_tensor(at::kFloat, {1024, 1536}).t());  // dense, permuted: kept as is
  batch.push_back(random_tensor(at::kFloat, {2048, 1024}).slice(0, 0, 2048, 2));  // not dense
  batch.push_back(random_tensor(at::kFloat, {kMiB}).pin_memory());
  return batch;
}

// Every leaf equal, bit for bit, to what per-tensor .to() gives.
void expect_same_as_per_tensor_to(const c10::IValue& out, const c10::impl::GenericList& in) {
  const c10::ArrayRef<c10::IValue> outs = out.toListRef();
  ASSERT_EQ(outs.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE("leaf " + std::to_string(i));
    const at::Tensor expected = to_device(in.get(i).toTensor(), kCuda0);
    const at::Tensor got = outs[i].toTensor();
    EXPECT_EQ(got.device(), kCuda0);
    EXPECT_EQ(got.sizes(), expected.sizes());
    EXPECT_EQ(got.scalar_type(), expected.scalar_type());
    EXPECT_TRUE(bytes_of(got) == bytes_of(expected)) << "values differ from .to()";
  }
}

// By the most threads that fill (0: all of them) and the design.
class PinnedUploadGpu : public GpuTest,
                        public ::testing::WithParamInterface<std::tuple<int, Design>> {};

TEST_P(PinnedUploadGpu, LargePageableTensorsAreBitwiseWhatToGives) {
  const ScopedUploadThreads threads(std::get<0>(GetParam()), std::get<1>(GetParam()));
  const c10::impl::GenericList batch = large_pageable_batch();
  const bool crew_asked =
      std::get<0>(GetParam()) == 0 && (std::get<1>(GetParam()) == Design::kOneQueuerAndCrew ||
                                       std::get<1>(GetParam()) == Design::kDefaults);
  for (int round = 0; round < 3; ++round) {  // the second and third find a warm pool and ring
    SCOPED_TRACE("round " + std::to_string(round));
    const int64_t crew_tasks = mtc::detail::upload_crew_tasks();
    CopyHandle h = start_copy(batch, kCuda0);
    const c10::IValue out = h.get();
    // The batch is above the crew's threshold: where the machine has threads to spare, the crew
    // is asked to help, and only then.
    if (crew_asked && mtc::detail::upload_crew_threads() > 0) {
      EXPECT_GT(mtc::detail::upload_crew_tasks(), crew_tasks) << "the crew was not asked to help";
    } else if (!crew_asked) {
      EXPECT_EQ(mtc::detail::upload_crew_tasks(), crew_tasks) << "the crew helped unasked";
    }
    expect_same_as_per_tensor_to(out, batch);
    expect_structure_copy(out, batch, kCuda0);
    EXPECT_EQ(h.stats().per_tensor, static_cast<int64_t>(batch.size()));
    EXPECT_GT(h.stats().pinned_bytes, 0);
    EXPECT_LE(h.stats().pinned_bytes,
              mtc::detail::kUploadSlots * mtc::detail::kUploadLargeChunkBytes)
        << "the ring holds more than its slots";
  }
}

// Rings of other shapes (benchmarks compare them): small slots that chunks span several of, and
// a ring of two, whose slots are each reused many times in one copy.
TEST_P(PinnedUploadGpu, LargePageableTensorsThroughOtherRingsAreWhatToGives) {
  const ScopedUploadThreads threads(std::get<0>(GetParam()), std::get<1>(GetParam()));
  const c10::impl::GenericList batch = large_pageable_batch();
  for (const auto& [slot_kib, slots] : {std::pair{256, 2}, std::pair{512, 12}}) {
    SCOPED_TRACE(std::to_string(slots) + " x " + std::to_string(slot_kib) + " KiB");
    const ScopedUploadRing ring(int64_t{slot_kib} << 10, slots);
    CopyHandle h = start_copy(batch, kCuda0);
    const c10::IValue out = h.get();
    expect_same_as_per_tensor_to(out, batch);
    EXPECT_LE(h.stats().pinned_bytes, int64_t{slots} * (int64_t{slot_kib} << 10));
  }
}

// Each CUDA call of the upload failing in turn (cuda_fault.h): the error comes out of get(), no
// thread is left waiting for a slot, the ring goes back to the pool, and the next copy is right.
// With one queuer the number of calls varies from copy to copy (it polls the slots' events), so
// the sweep covers the first calls of every copy rather than every call.
TEST_P(PinnedUploadGpu, AFailedCallOfTheUploadSurfacesAndReleasesTheRing) {
  const ScopedUploadThreads threads(std::get<0>(GetParam()), std::get<1>(GetParam()));
  c10::impl::GenericList batch(c10::AnyType::get());
  for (int i = 0; i < 6; ++i) batch.push_back(random_tensor(at::kFloat, {kMiB}));  // 4 MiB each
  const mtc::test::Watchdog watchdog(std::chrono::seconds(120), "the upload's fault sweep");
  const int64_t before = mtc::test::pinned_in_use();
  int64_t surfaced = 0;
  for (int64_t call = 1; call <= 24; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    mtc::detail::CudaFaultInjection::arm(call, cudaErrorInvalidValue);
    {
      CopyHandle h = start_copy(batch, kCuda0);
      try {
        const c10::IValue out = h.get();
        mtc::detail::CudaFaultInjection::disarm();
        expect_same_as_per_tensor_to(out, batch);
      } catch (const c10::Error& e) {
        const std::string message = e.what_without_backtrace();
        EXPECT_TRUE(mtc::detail::CudaFaultInjection::disarm()) << message;
        EXPECT_NE(message.find("cudaErrorInvalidValue"), std::string::npos) << message;
        EXPECT_NE(message.find("mtc: cuda"), std::string::npos)
            << "the error does not name the CUDA call: " << message;
        ++surfaced;
      }
    }
    EXPECT_EQ(mtc::test::pinned_in_use(), before) << "the ring is still held";
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(surfaced, 0) << "no injected failure reached get()";
  CopyHandle after = start_copy(batch, kCuda0);
  expect_same_as_per_tensor_to(after.get(), batch);
}

// The profile a benchmark reads: every piece (each thread queuing: every chunk) counted once, by
// at least the upload's own thread, with time spent filling, and the queuer's time only where one
// thread queued the DMAs; nothing recorded with it off. By default one queuer and 256 KiB pieces
// exactly where the crew joined; each thread queuing whole chunks elsewhere.
TEST_P(PinnedUploadGpu, TheProfileCountsEveryPieceOnce) {
  const int thread_limit = std::get<0>(GetParam());
  const Design design = std::get<1>(GetParam());
  const ScopedUploadThreads threads(thread_limit, design);
  c10::impl::GenericList batch(c10::AnyType::get());
  for (int i = 0; i < 6; ++i) batch.push_back(random_tensor(at::kFloat, {kMiB}));  // 4 MiB each
  const int64_t crew_tasks = mtc::detail::upload_crew_tasks();
  mtc::detail::set_upload_profiling(true);
  start_copy(batch, kCuda0).get();
  mtc::detail::set_upload_profiling(false);
  const mtc::detail::UploadProfile profile = mtc::detail::last_upload_profile();
  const bool crew_joined = mtc::detail::upload_crew_tasks() > crew_tasks;

  // 24 MiB: the large uploads' chunks, kUploadLargeChunkBytes.
  const int64_t chunk = mtc::detail::upload_slot_bytes_for(6 * 4 * kMiB);
  EXPECT_EQ(chunk, mtc::detail::kUploadLargeChunkBytes);
  const bool whole = design == Design::kEachQueues || design == Design::kOneQueuerWholeChunks;
  int64_t unit = whole ? chunk : mtc::detail::kUploadMinPieceBytes;
  bool one_queuer = design != Design::kEachQueues;
  if (design == Design::kDefaults) {
    one_queuer = crew_joined;
    unit = crew_joined ? mtc::detail::kUploadPieceBytes : chunk;
    if (thread_limit == 0 && mtc::detail::upload_crew_threads() > 0) {
      EXPECT_TRUE(crew_joined) << "24 MiB with every thread allowed: the crew should join";
    }
  }
  EXPECT_EQ(profile.pieces, 6 * 4 * kMiB / unit);
  EXPECT_EQ(profile.queuer_pump_us > 0, one_queuer) << "who queued the DMAs";
  EXPECT_GE(profile.fill_threads, 1);
  EXPECT_GT(profile.fill_us, 0);
  EXPECT_GT(profile.wall_us, 0);
  start_copy(batch, kCuda0).get();
  EXPECT_EQ(mtc::detail::last_upload_profile().wall_us, profile.wall_us) << "recorded while off";
}

// A training batch: a few MB-sized tensors beside hundreds of small ones (packed).
TEST_P(PinnedUploadGpu, MixedBatchIsBitwiseWhatToGives) {
  const ScopedUploadThreads threads(std::get<0>(GetParam()), std::get<1>(GetParam()));
  c10::impl::GenericList batch(c10::AnyType::get());
  batch.push_back(reference_batch());
  c10::impl::GenericList large(c10::AnyType::get());
  for (int i = 0; i < 4; ++i)
    large.push_back(random_tensor(at::kFloat, {512 * 1024 + 1000 * i}));  // ~2 MB
  batch.push_back(large);
  CopyHandle h = start_copy(batch, kCuda0);
  const c10::IValue out = h.get();
  expect_structure_copy(out, batch, kCuda0);
  expect_same_as_per_tensor_to(out.toListRef()[1], large);
  EXPECT_EQ(h.stats().per_tensor, 4);
  EXPECT_EQ(h.stats().packed, 528);
}

constexpr const char* kDesignNames[] = {"EachQueues", "OneQueuer", "OneQueuerWholeChunks",
                                        "OneQueuerAndCrew", "Defaults"};

std::string threads_name(const ::testing::TestParamInfo<std::tuple<int, Design>>& info) {
  const int threads = std::get<0>(info.param);
  return (threads == 0 ? "AllThreads" : std::to_string(threads) + "Threads") +
         (kDesignNames[static_cast<int>(std::get<1>(info.param))]);
}

// 0: the default (the calling thread and every worker).
INSTANTIATE_TEST_SUITE_P(
    FillThreads, PinnedUploadGpu,
    ::testing::Combine(::testing::Values(1, 2, 0),
                       ::testing::Values(Design::kEachQueues, Design::kOneQueuer,
                                         Design::kOneQueuerWholeChunks, Design::kOneQueuerAndCrew,
                                         Design::kDefaults)),
    threads_name);

// GPU->CPU with pinned_host_outputs: the small tensors still come back packed, views of one
// pinned block the DMA landed in, the others in pinned outputs of their own; pageable without it.
// All bitwise what .to() gives.
TEST_F(GpuTest, PinnedHostOutputsAreBitwiseWhatToGives) {
  c10::impl::GenericList large(c10::AnyType::get());
  for (int i = 0; i < 4; ++i)
    large.push_back(random_tensor(at::kFloat, {512 * 1024 + 1000 * i}, kCuda0));
  large.push_back(
      random_tensor(at::kFloat, {2048, 1024}, kCuda0).slice(0, 0, 2048, 2));  // not dense
  large.push_back(random_tensor(at::kByte, {300 * kKiB + 1}, kCuda0));
  c10::impl::GenericList batch(c10::AnyType::get());
  batch.push_back(reference_batch(kCuda0));
  batch.push_back(large);
  for (const bool pinned_outputs : {true, false}) {
    SCOPED_TRACE(pinned_outputs ? "pinned outputs" : "pageable outputs");
    CopyOptions options;
    options.pinned_host_outputs = pinned_outputs;
    CopyHandle h = start_copy(batch, kCpu, options);
    const c10::IValue out = h.get();
    expect_structure_copy(out, batch, kCpu);
    const c10::ArrayRef<c10::IValue> outs = out.toListRef()[1].toListRef();
    for (size_t i = 0; i < large.size(); ++i) {
      SCOPED_TRACE("large leaf " + std::to_string(i));
      const at::Tensor got = outs[i].toTensor();
      EXPECT_EQ(got.is_pinned(), pinned_outputs);
      EXPECT_TRUE(bytes_of(got) == bytes_of(large.get(i).toTensor().cpu()));
    }
    const std::vector<at::Tensor> smalls = tensors_of(out.toListRef()[0]);
    const std::vector<at::Tensor> inputs = tensors_of(batch.get(0));
    ASSERT_EQ(smalls.size(), inputs.size());
    for (size_t i = 0; i < smalls.size(); ++i) {
      EXPECT_EQ(smalls[i].is_pinned(), pinned_outputs) << "small leaf " << i;
      EXPECT_TRUE(bytes_of(smalls[i]) == bytes_of(inputs[i].cpu())) << "small leaf " << i;
    }
    EXPECT_EQ(h.stats().packed, 528);
    EXPECT_EQ(h.stats().per_tensor, static_cast<int64_t>(large.size()));
  }
}

TEST(PinnedUploadSettings, ThreadLimitIsKept) {
  mtc::detail::set_upload_threads(3);
  EXPECT_EQ(mtc::detail::upload_threads(), 3);
  mtc::detail::set_upload_threads(-2);
  EXPECT_EQ(mtc::detail::upload_threads(), 0) << "a negative limit means the default";
  mtc::detail::set_upload_threads(0);
}

TEST(PinnedUploadSettings, TheDesignResetsToItsDefault) {
  EXPECT_EQ(mtc::detail::upload_queuing(), mtc::detail::UploadQueuing::kAuto);
  EXPECT_EQ(mtc::detail::upload_crew_limit(), mtc::detail::kUploadCrewByDefault);
  EXPECT_EQ(mtc::detail::upload_piece_bytes(), 0) << "the default: pieces with the crew only";
  {
    const ScopedUploadThreads threads(0, Design::kOneQueuerAndCrew);
    EXPECT_EQ(mtc::detail::upload_queuing(), mtc::detail::UploadQueuing::kOneQueuer);
    EXPECT_EQ(mtc::detail::upload_crew_limit(), -1);
    EXPECT_EQ(mtc::detail::upload_piece_bytes(), mtc::detail::kUploadMinPieceBytes);
  }
  {
    const ScopedUploadThreads threads(0, Design::kEachQueues);
    EXPECT_EQ(mtc::detail::upload_queuing(), mtc::detail::UploadQueuing::kEachThread);
  }
  EXPECT_EQ(mtc::detail::upload_queuing(), mtc::detail::UploadQueuing::kAuto);
  EXPECT_EQ(mtc::detail::upload_crew_limit(), mtc::detail::kUploadCrewByDefault);
  EXPECT_EQ(mtc::detail::upload_piece_bytes(), 0) << "the default: pieces with the crew only";
  mtc::detail::set_upload_crew(-7);
  EXPECT_EQ(mtc::detail::upload_crew_limit(), -1) << "any negative limit: as many as it has";
  mtc::detail::set_upload_crew(2);
  EXPECT_EQ(mtc::detail::upload_crew_limit(), 2);
  mtc::detail::reset_upload_settings();
}

TEST(PinnedUploadSettings, PieceIsRoundedAndResets) {
  mtc::detail::set_upload_piece(1);
  EXPECT_EQ(mtc::detail::upload_piece_bytes(), mtc::detail::kUploadMinPieceBytes)
      << "no piece below the smallest";
  mtc::detail::set_upload_piece((100 << 10) + 1);
  EXPECT_EQ(mtc::detail::upload_piece_bytes(), 104 << 10) << "up to 4 KiB";
  mtc::detail::set_upload_piece(-5);
  EXPECT_EQ(mtc::detail::upload_piece_bytes(), 0) << "a negative size: the default";
  mtc::detail::set_upload_piece(1 << 20);
  mtc::detail::reset_upload_settings();
  EXPECT_EQ(mtc::detail::upload_piece_bytes(), 0) << "the default: pieces with the crew only";
}

TEST(PinnedUploadSettings, RingShapeIsRoundedAndResets) {
  mtc::detail::set_upload_ring(0, 0);
  EXPECT_EQ(mtc::detail::upload_slot_bytes(), 0) << "the default";
  EXPECT_EQ(mtc::detail::upload_slot_bytes_for(mtc::detail::kUploadCrewBytes - 1),
            mtc::detail::kUploadChunkBytes);
  EXPECT_EQ(mtc::detail::upload_slot_bytes_for(mtc::detail::kUploadCrewBytes),
            mtc::detail::kUploadLargeChunkBytes)
      << "larger slots for uploads the crew may join";
  EXPECT_EQ(mtc::detail::upload_slots(), mtc::detail::kUploadSlots);
  mtc::detail::set_upload_ring((512 << 10) + 1, 12);
  EXPECT_EQ(mtc::detail::upload_slot_bytes(), (512 << 10) + 256) << "up to the pool's granularity";
  EXPECT_EQ(mtc::detail::upload_slots(), 12);
  EXPECT_EQ(mtc::detail::upload_slot_bytes_for(int64_t{1} << 30), (512 << 10) + 256)
      << "a size set holds for every upload";
  mtc::detail::set_upload_ring(1, -3);
  EXPECT_EQ(mtc::detail::upload_slot_bytes(), mtc::detail::kUploadMinSlotBytes)
      << "no slot below the smallest one the ring shrinks to";
  EXPECT_EQ(mtc::detail::upload_slots(), mtc::detail::kUploadSlots) << "a negative count: default";
  mtc::detail::set_upload_ring(0, 0);
  EXPECT_EQ(mtc::detail::upload_slot_bytes(), 0);
}

}  // namespace
