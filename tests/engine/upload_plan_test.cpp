// The pinned upload's plan (upload_plan.h), on any machine: which design an upload takes by
// default and under each setting, the pieces its fill threads take, and how many tasks go to the
// copy's pool and to the crew. The GPU tests (large_tensors_gpu_test.cpp) run the plans.
#include "detail/upload_plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "detail/pinned_upload.h"
#include "detail/worker_pool.h"

namespace {

using mtc::detail::HostToDeviceSpan;
using mtc::detail::kUploadChunkBytes;
using mtc::detail::kUploadLargeChunkBytes;
using mtc::detail::UploadPlan;
using mtc::detail::UploadQueuing;
using mtc::detail::WorkerPool;

constexpr int64_t kMiB = int64_t{1} << 20;

// Chunks of `total` bytes as the upload cuts them (of at most one slot, by default
// upload_slot_bytes_for(total)); planning reads sizes only.
std::vector<HostToDeviceSpan> chunks_of(int64_t total, int64_t slot_bytes) {
  std::vector<HostToDeviceSpan> chunks;
  for (int64_t done = 0; done < total; done += slot_bytes)
    chunks.push_back({nullptr, nullptr, std::min(slot_bytes, total - done)});
  return chunks;
}

WorkerPool& copy_pool(int threads) {
  static WorkerPool four(4, std::chrono::microseconds(0), /*anticipate=*/false);
  static WorkerPool seven(7, std::chrono::microseconds(0), /*anticipate=*/false);
  return threads == 4 ? four : seven;
}

// A crew of four, and one the machine could not spare; each counts how often it was asked for.
int crew_asked = 0;
WorkerPool* crew_of_four(const WorkerPool&) {
  static WorkerPool crew(4, std::chrono::microseconds(0), /*anticipate=*/false);
  ++crew_asked;
  return &crew;
}
WorkerPool* no_crew(const WorkerPool&) {
  ++crew_asked;
  return nullptr;
}

UploadPlan plan(int64_t total, int pool_threads, mtc::detail::CrewSource crew = crew_of_four) {
  const int64_t slot_bytes = mtc::detail::upload_slot_bytes_for(total);
  return mtc::detail::plan_upload(chunks_of(total, slot_bytes), total, slot_bytes,
                                  copy_pool(pool_threads), crew);
}

class UploadPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mtc::detail::reset_upload_settings();
    crew_asked = 0;
  }
  void TearDown() override { mtc::detail::reset_upload_settings(); }
};

TEST_F(UploadPlanTest, ByDefaultALargeUploadTakesTheCrewOneQueuerAndPieces) {
  const UploadPlan p = plan(256 * kMiB, 4);
  EXPECT_TRUE(p.one_queuer);
  EXPECT_EQ(p.piece_bytes, mtc::detail::kUploadPieceBytes);
  EXPECT_EQ(p.items, 256 * kMiB / mtc::detail::kUploadPieceBytes);
  EXPECT_EQ(p.helpers, 4);
  EXPECT_NE(p.crew, nullptr);
  EXPECT_EQ(p.crew_helpers, 4);
}

TEST_F(UploadPlanTest, ByDefaultWithoutTheCrewEachThreadQueuesWholeChunks) {
  const UploadPlan p = plan(256 * kMiB, 4, no_crew);
  EXPECT_EQ(crew_asked, 1);
  EXPECT_FALSE(p.one_queuer);
  EXPECT_EQ(p.piece_bytes, kUploadLargeChunkBytes) << "a large upload's whole chunks";
  EXPECT_EQ(p.items, 64);
  EXPECT_EQ(p.helpers, 4);
  EXPECT_EQ(p.crew_helpers, 0);
}

TEST_F(UploadPlanTest, BelowTheCrewsSizeEachThreadQueuesAndTheCrewIsNotAsked) {
  const UploadPlan p = plan(8 * kMiB, 4);
  EXPECT_EQ(crew_asked, 0);
  EXPECT_FALSE(p.one_queuer);
  EXPECT_EQ(p.piece_bytes, kUploadChunkBytes);
  EXPECT_EQ(p.helpers, 3) << "four chunks: the upload's own thread and three helpers";
  EXPECT_EQ(p.crew_helpers, 0);
}

// Counted in pieces, 16 MiB leave the crew room beside seven workers (in whole chunks, four of
// them, they would not).
TEST_F(UploadPlanTest, SixteenMiBLeaveTheCrewRoomBesideSevenWorkers) {
  const UploadPlan p = plan(mtc::detail::kUploadCrewBytes, 7);
  EXPECT_TRUE(p.one_queuer);
  EXPECT_EQ(p.helpers, 7);
  EXPECT_EQ(p.crew_helpers, 4);
}

TEST_F(UploadPlanTest, UploadsBelowAMegabyteTakeNoHelpers) {
  const UploadPlan p = plan(mtc::detail::kUploadParallelBytes - 1, 4);
  EXPECT_FALSE(p.one_queuer);
  EXPECT_EQ(p.helpers, 0);
  EXPECT_EQ(p.items, 1);
}

TEST_F(UploadPlanTest, AThreadLimitHoldsTheCrewToo) {
  mtc::detail::set_upload_threads(2);
  UploadPlan p = plan(256 * kMiB, 4);
  EXPECT_FALSE(p.one_queuer) << "no room for the crew: each thread queues";
  EXPECT_EQ(p.helpers, 1);
  EXPECT_EQ(p.crew_helpers, 0);
  EXPECT_EQ(crew_asked, 0) << "the crew is not made where it has no room";
  mtc::detail::set_upload_threads(7);
  p = plan(256 * kMiB, 4);
  EXPECT_TRUE(p.one_queuer);
  EXPECT_EQ(p.helpers, 4);
  EXPECT_EQ(p.crew_helpers, 2) << "seven threads: the upload's own, four workers, two of the crew";
}

TEST_F(UploadPlanTest, TheSettingsChooseTheDesign) {
  mtc::detail::set_upload_queuing(UploadQueuing::kEachThread);
  UploadPlan p = plan(256 * kMiB, 4);
  EXPECT_FALSE(p.one_queuer);
  EXPECT_EQ(p.crew_helpers, 0);
  EXPECT_EQ(crew_asked, 0);

  mtc::detail::set_upload_queuing(UploadQueuing::kOneQueuer);
  mtc::detail::set_upload_crew(0);
  p = plan(256 * kMiB, 4);
  EXPECT_TRUE(p.one_queuer) << "one queuer asked for, without the crew";
  EXPECT_EQ(p.piece_bytes, kUploadLargeChunkBytes) << "without the crew, whole chunks by default";
  EXPECT_EQ(p.crew_helpers, 0);

  mtc::detail::set_upload_piece(64 << 10);
  p = plan(256 * kMiB, 4);
  EXPECT_EQ(p.piece_bytes, 64 << 10) << "a piece set is taken, crew or not";
  EXPECT_EQ(p.items, 256 * kMiB / (64 << 10));

  mtc::detail::set_upload_crew(2);
  mtc::detail::set_upload_piece(int64_t{1} << 40);
  p = plan(256 * kMiB, 4);
  EXPECT_EQ(p.piece_bytes, kUploadLargeChunkBytes) << "a piece larger than a chunk is the chunk";
  EXPECT_EQ(p.crew_helpers, 2) << "the crew's limit";
}

}  // namespace
