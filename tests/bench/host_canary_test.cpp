#include "runner/env/host_canary.h"

#include <gtest/gtest.h>

namespace mtc::bench {
namespace {

CanaryRecord record(int64_t round, double malloc_free_us,
                    std::optional<double> h2d_us = std::nullopt) {
  return CanaryRecord{"h2d", "hot", round, CanaryReading{malloc_free_us, h2d_us}, 0};
}

TEST(HostCanary, ReadsTheAllocatorWithoutAGpu) {
  HostCanary canary(-1);
  const CanaryReading r = canary.read();
  EXPECT_GT(r.malloc_free_us, 0.0);
  EXPECT_LT(r.malloc_free_us, 1e5);  // 528 pairs: microseconds, not a tenth of a second
  EXPECT_FALSE(r.h2d_4k_us.has_value());
}

TEST(HostCanary, SteadyRoundsAreNotFlagged) {
  const std::vector<CanaryRecord> rounds{record(0, 20.0, 7.0), record(1, 21.0, 7.2),
                                         record(2, 20.5, 6.9)};
  const nlohmann::json j = canary_json(rounds);
  EXPECT_FALSE(j["changed_state"].get<bool>());
  EXPECT_DOUBLE_EQ(j["malloc_free_us"]["min"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j["malloc_free_us"]["median"].get<double>(), 20.5);
  EXPECT_DOUBLE_EQ(j["h2d_4k_us"]["max"].get<double>(), 7.2);
  EXPECT_EQ(j["rounds"].size(), 3u);
  EXPECT_TRUE(canary_note(rounds).empty());
}

TEST(HostCanary, AStateChangeIsFlaggedAndSaid) {
  // The two states of the GPU host: ~20 us and 27-30 us for the 528 pairs.
  const std::vector<CanaryRecord> rounds{record(0, 20.0), record(1, 28.5), record(2, 20.4)};
  EXPECT_TRUE(canary_json(rounds)["changed_state"].get<bool>());
  EXPECT_TRUE(canary_json(rounds)["h2d_4k_us"].is_null());
  const std::string note = canary_note(rounds);
  EXPECT_EQ(note.rfind(kCanaryNotePrefix, 0), 0u) << note;
  EXPECT_NE(note.find("528 malloc/free pairs 20.0-28.5 us"), std::string::npos) << note;
}

TEST(HostCanary, RecordsComeBackFromAReport) {
  const std::vector<CanaryRecord> rounds{record(0, 20.0, 7.0), record(1, 28.0)};
  const auto back = canary_records(canary_json(rounds), 2);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].round, 1);
  EXPECT_EQ(back[1].process, 2);
  EXPECT_DOUBLE_EQ(back[0].reading.h2d_4k_us.value(), 7.0);
  EXPECT_FALSE(back[1].reading.h2d_4k_us.has_value());
  EXPECT_TRUE(canary_records(nlohmann::json(), 0).empty());
  EXPECT_TRUE(canary_records(nlohmann::json{{"rounds", {1, "x"}}}, 0).empty());
}

}  // namespace
}  // namespace mtc::bench
