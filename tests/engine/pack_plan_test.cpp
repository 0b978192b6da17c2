// PackPlan: the packing layout is a pure function of sizes, element sizes and options.
#include "detail/pack_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "mtc/copier.h"

namespace mtc::detail {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

std::vector<PackCandidate> candidates_of(
    const std::vector<std::pair<int64_t, int64_t>>& bytes_and_elem) {
  std::vector<PackCandidate> out;
  for (size_t i = 0; i < bytes_and_elem.size(); ++i)
    out.push_back({static_cast<int64_t>(i), bytes_and_elem[i].first, bytes_and_elem[i].second});
  return out;
}

std::vector<int64_t> offsets_of(const PackPlan& plan) {
  std::vector<int64_t> out;
  for (const PackItem& item : plan.items) out.push_back(item.offset);
  return out;
}

std::vector<int64_t> chunks_of(const PackPlan& plan) {
  std::vector<int64_t> out;
  for (const PackItem& item : plan.items) out.push_back(item.chunk);
  return out;
}

// Every structural promise of a plan, checked against its candidates.
void expect_consistent(const PackPlan& plan, const std::vector<PackCandidate>& candidates,
                       int64_t min_alignment, int64_t max_chunk_bytes) {
  // Candidates too large for an empty chunk are listed, in order; all others are items, in order.
  std::vector<int64_t> expected_too_large;
  std::vector<const PackCandidate*> expected_items;
  for (const PackCandidate& c : candidates) {
    if (c.bytes > max_chunk_bytes) {
      expected_too_large.push_back(c.leaf);
    } else {
      expected_items.push_back(&c);
    }
  }
  ASSERT_EQ(plan.too_large, expected_too_large);
  ASSERT_EQ(plan.items.size(), expected_items.size());

  int64_t item_index = 0;
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    const PackChunk& chunk = plan.chunks[c];
    SCOPED_TRACE(::testing::Message() << "chunk " << c);
    EXPECT_EQ(chunk.first_item, item_index) << "chunks must cover the items in order";
    ASSERT_GT(chunk.item_count, 0) << "no empty chunk";
    EXPECT_LE(chunk.bytes, max_chunk_bytes);
    int64_t end = 0;
    for (int64_t k = chunk.first_item; k < chunk.first_item + chunk.item_count; ++k) {
      const PackItem& item = plan.items[k];
      const PackCandidate& cand = *expected_items[k];
      EXPECT_EQ(item.leaf, cand.leaf);
      EXPECT_EQ(item.bytes, cand.bytes);
      EXPECT_EQ(item.chunk, static_cast<int64_t>(c));
      const int64_t alignment = std::max(min_alignment, cand.element_size);
      EXPECT_EQ(item.offset % alignment, 0) << "item " << k;
      // Greedy and tight: each item sits at the first aligned offset after the previous one.
      EXPECT_EQ(item.offset, round_up(end, alignment)) << "item " << k;
      end = item.offset + item.bytes;
    }
    EXPECT_EQ(chunk.bytes, end) << "a chunk ends where its last item ends";
    // A chunk is closed only when the next item would not have fit behind its last item.
    if (c + 1 < plan.chunks.size()) {
      const PackCandidate& next = *expected_items[chunk.first_item + chunk.item_count];
      const int64_t alignment = std::max(min_alignment, next.element_size);
      EXPECT_GT(round_up(chunk.bytes, alignment) + next.bytes, max_chunk_bytes)
          << "chunk " << c << " was closed although the next item fitted";
    }
    item_index += chunk.item_count;
  }
  EXPECT_EQ(item_index, static_cast<int64_t>(plan.items.size()));
}

TEST(PackableSize, BoundariesAreOneByteTo256KiBInclusive) {
  EXPECT_EQ(kMaxPackedTensorBytes, 256 * kKiB);
  EXPECT_FALSE(is_packable_size(-1));
  EXPECT_FALSE(is_packable_size(0));
  EXPECT_TRUE(is_packable_size(1));
  EXPECT_TRUE(is_packable_size(4096));
  EXPECT_TRUE(is_packable_size(256 * kKiB - 1));
  EXPECT_TRUE(is_packable_size(256 * kKiB));
  EXPECT_FALSE(is_packable_size(256 * kKiB + 1));
  EXPECT_FALSE(is_packable_size(64 * kMiB));
}

TEST(PackPlan, NoCandidatesGiveAnEmptyPlan) {
  const std::vector<PackCandidate> none;
  const PackPlan plan = plan_packing(none, 16, 32 * kMiB);
  EXPECT_TRUE(plan.items.empty());
  EXPECT_TRUE(plan.chunks.empty());
  EXPECT_TRUE(plan.too_large.empty());
}

TEST(PackPlan, SingleCandidate) {
  const auto cands = candidates_of({{10, 1}});
  const PackPlan plan = plan_packing(cands, 16, 32 * kMiB);
  ASSERT_EQ(plan.items.size(), 1u);
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.items[0].leaf, 0);
  EXPECT_EQ(plan.items[0].offset, 0);
  EXPECT_EQ(plan.items[0].bytes, 10);
  EXPECT_EQ(plan.chunks[0].bytes, 10);
  EXPECT_EQ(plan.chunks[0].first_item, 0);
  EXPECT_EQ(plan.chunks[0].item_count, 1);
}

TEST(PackPlan, OffsetsFollowTheMinimumAlignment) {
  // 16-byte alignment, elements no larger than that: every item starts on a 16-byte boundary.
  const auto cands = candidates_of({{10, 1}, {3, 1}, {8, 8}, {4, 4}, {16, 4}, {1, 1}, {2, 2}});
  const PackPlan plan = plan_packing(cands, 16, 32 * kMiB);
  EXPECT_EQ(offsets_of(plan), (std::vector<int64_t>{0, 16, 32, 48, 64, 80, 96}));
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].bytes, 98) << "payload ends at the last item's end, no tail padding";
  EXPECT_TRUE(plan.too_large.empty());
  expect_consistent(plan, cands, 16, 32 * kMiB);
}

TEST(PackPlan, ElementSizeWinsOverASmallerMinimumAlignment) {
  // Alignment 1: bytes pack tightly, but each tensor still starts on a multiple of its element
  // size (mixed dtypes: uint8, double, half, bool, complex128, float, int16, complex64).
  const auto cands =
      candidates_of({{1, 1}, {8, 8}, {6, 2}, {1, 1}, {32, 16}, {12, 4}, {2, 2}, {8, 8}, {3, 1}});
  const PackPlan plan = plan_packing(cands, 1, 32 * kMiB);
  EXPECT_EQ(offsets_of(plan), (std::vector<int64_t>{0, 8, 16, 22, 32, 64, 76, 80, 88}));
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].bytes, 91);
  expect_consistent(plan, cands, 1, 32 * kMiB);
}

TEST(PackPlan, AlignmentOneAndByteElementsPackWithoutGaps) {
  const auto cands = candidates_of({{5, 1}, {7, 1}, {1, 1}, {3, 1}});
  const PackPlan plan = plan_packing(cands, 1, 32 * kMiB);
  EXPECT_EQ(offsets_of(plan), (std::vector<int64_t>{0, 5, 12, 13}));
  EXPECT_EQ(plan.chunks.at(0).bytes, 16);
}

TEST(PackPlan, LargeAlignments) {
  for (const int64_t alignment : {64, 256, 512, 1024, 4096}) {
    SCOPED_TRACE(::testing::Message() << "alignment " << alignment);
    const auto cands = candidates_of({{1, 1}, {alignment, 4}, {alignment + 1, 1}, {24, 8}});
    const PackPlan plan = plan_packing(cands, alignment, 32 * kMiB);
    EXPECT_EQ(offsets_of(plan), (std::vector<int64_t>{0, alignment, 2 * alignment, 4 * alignment}));
    ASSERT_EQ(plan.chunks.size(), 1u);
    EXPECT_EQ(plan.chunks[0].bytes, 4 * alignment + 24);
    expect_consistent(plan, cands, alignment, 32 * kMiB);
  }
}

TEST(PackPlan, ChunkFilledExactlyToTheLimit) {
  // Two 32-byte items fill a 64-byte chunk exactly: one chunk.
  const auto cands = candidates_of({{32, 4}, {32, 4}});
  const PackPlan plan = plan_packing(cands, 16, 64);
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].bytes, 64);
  EXPECT_EQ(chunks_of(plan), (std::vector<int64_t>{0, 0}));
  EXPECT_TRUE(plan.too_large.empty());
}

TEST(PackPlan, OneByteOverTheLimitOpensANewChunk) {
  const auto cands = candidates_of({{32, 4}, {33, 1}});
  const PackPlan plan = plan_packing(cands, 16, 64);
  ASSERT_EQ(plan.chunks.size(), 2u);
  EXPECT_EQ(chunks_of(plan), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(offsets_of(plan), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(plan.chunks[0].bytes, 32);
  EXPECT_EQ(plan.chunks[1].bytes, 33);
  EXPECT_EQ(plan.chunks[1].first_item, 1);
  expect_consistent(plan, cands, 16, 64);
}

TEST(PackPlan, PaddingCountsTowardsTheLimit) {
  // 40 bytes, then 16 bytes at offset 48: ends at 64, fits exactly.
  {
    const auto cands = candidates_of({{40, 1}, {16, 1}});
    const PackPlan plan = plan_packing(cands, 16, 64);
    ASSERT_EQ(plan.chunks.size(), 1u);
    EXPECT_EQ(offsets_of(plan), (std::vector<int64_t>{0, 48}));
    EXPECT_EQ(plan.chunks[0].bytes, 64);
  }
  // 40 bytes, then 17 bytes: 40 + 17 = 57 would fit unpadded, but aligned it ends at 65.
  {
    const auto cands = candidates_of({{40, 1}, {17, 1}});
    const PackPlan plan = plan_packing(cands, 16, 64);
    ASSERT_EQ(plan.chunks.size(), 2u);
    EXPECT_EQ(chunks_of(plan), (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(plan.chunks[0].bytes, 40);
    EXPECT_EQ(plan.chunks[1].bytes, 17);
  }
}

TEST(PackPlan, TensorOfExactlyTheLimitFillsOneChunk) {
  const auto cands = candidates_of({{8, 8}, {64, 4}, {8, 8}});
  const PackPlan plan = plan_packing(cands, 16, 64);
  EXPECT_TRUE(plan.too_large.empty());
  ASSERT_EQ(plan.chunks.size(), 3u);
  EXPECT_EQ(chunks_of(plan), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(plan.chunks[1].bytes, 64);
  expect_consistent(plan, cands, 16, 64);
}

TEST(PackPlan, TensorLargerThanTheLimitIsTooLarge) {
  const auto cands = candidates_of({{8, 8}, {65, 1}, {8, 8}, {1000, 4}, {4, 4}});
  const PackPlan plan = plan_packing(cands, 16, 64);
  EXPECT_EQ(plan.too_large, (std::vector<int64_t>{1, 3}));
  // The others keep packing into the same chunk around them.
  ASSERT_EQ(plan.items.size(), 3u);
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.items[0].leaf, 0);
  EXPECT_EQ(plan.items[1].leaf, 2);
  EXPECT_EQ(plan.items[2].leaf, 4);
  EXPECT_EQ(offsets_of(plan), (std::vector<int64_t>{0, 16, 32}));
  EXPECT_EQ(plan.chunks[0].bytes, 36);
  expect_consistent(plan, cands, 16, 64);
}

TEST(PackPlan, EverythingTooLargeGivesNoChunk) {
  const auto cands = candidates_of({{65, 1}, {100, 4}});
  const PackPlan plan = plan_packing(cands, 16, 64);
  EXPECT_TRUE(plan.items.empty());
  EXPECT_TRUE(plan.chunks.empty());
  EXPECT_EQ(plan.too_large, (std::vector<int64_t>{0, 1}));
}

TEST(PackPlan, KeepsTheCandidatesLeafIndices) {
  // Leaf indices need not be dense: the plan reports the candidate's leaf, not its position.
  const std::vector<PackCandidate> cands{{7, 4, 4}, {3, 100, 1}, {42, 8, 8}};
  const PackPlan plan = plan_packing(cands, 16, 64);
  EXPECT_EQ(plan.too_large, (std::vector<int64_t>{3}));
  ASSERT_EQ(plan.items.size(), 2u);
  EXPECT_EQ(plan.items[0].leaf, 7);
  EXPECT_EQ(plan.items[1].leaf, 42);
}

TEST(PackPlan, The256KiBBoundaryUnderTheDefaultLimit) {
  // Largest packable tensors: several of them share one chunk of the default 32 MiB limit.
  const CopyOptions defaults;
  EXPECT_EQ(defaults.max_packed_chunk_bytes, 32 * kMiB);
  EXPECT_EQ(defaults.min_packed_alignment_bytes, 16);
  std::vector<PackCandidate> cands;
  for (int64_t i = 0; i < 130; ++i) cands.push_back({i, kMaxPackedTensorBytes, 4});
  const PackPlan plan =
      plan_packing(cands, defaults.min_packed_alignment_bytes, defaults.max_packed_chunk_bytes);
  // 128 tensors of 256 KiB fill 32 MiB exactly; the 129th opens the second chunk.
  ASSERT_EQ(plan.chunks.size(), 2u);
  EXPECT_EQ(plan.chunks[0].item_count, 128);
  EXPECT_EQ(plan.chunks[0].bytes, 32 * kMiB);
  EXPECT_EQ(plan.chunks[1].item_count, 2);
  EXPECT_EQ(plan.chunks[1].bytes, 2 * kMaxPackedTensorBytes);
  expect_consistent(plan, cands, defaults.min_packed_alignment_bytes,
                    defaults.max_packed_chunk_bytes);
}

TEST(PackPlan, ManySmallTensorsSplitIntoEqualChunks) {
  // 100 tensors of 100 bytes at 16-byte alignment occupy 112 bytes each (the last 100):
  // a 1120-byte limit holds exactly 10 per chunk (9 * 112 + 100 = 1108).
  std::vector<PackCandidate> cands;
  for (int64_t i = 0; i < 100; ++i) cands.push_back({i, 100, 4});
  const PackPlan plan = plan_packing(cands, 16, 1120);
  ASSERT_EQ(plan.chunks.size(), 10u);
  for (const PackChunk& chunk : plan.chunks) {
    EXPECT_EQ(chunk.item_count, 10);
    EXPECT_EQ(chunk.bytes, 1108);
  }
  expect_consistent(plan, cands, 16, 1120);
}

TEST(PackPlan, ChunkLimitSmallerThanTheAlignment) {
  // Each item starts at 0 in its own chunk once the aligned offset would pass the limit.
  const auto cands = candidates_of({{10, 1}, {10, 1}, {10, 1}});
  const PackPlan plan = plan_packing(cands, 4096, 100);
  ASSERT_EQ(plan.chunks.size(), 3u);
  EXPECT_EQ(offsets_of(plan), (std::vector<int64_t>{0, 0, 0}));
  expect_consistent(plan, cands, 4096, 100);
}

TEST(PackPlan, RandomizedPlansKeepEveryInvariant) {
  std::mt19937_64 rng(12345);
  const int64_t element_sizes[] = {1, 2, 4, 8, 16};
  const int64_t alignments[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 4096};
  for (int round = 0; round < 300; ++round) {
    const int64_t alignment = alignments[rng() % std::size(alignments)];
    const int64_t limit = 1 + static_cast<int64_t>(rng() % (2 * kMaxPackedTensorBytes));
    const size_t count = rng() % 200;
    std::vector<PackCandidate> cands;
    for (size_t i = 0; i < count; ++i) {
      const int64_t elem = element_sizes[rng() % std::size(element_sizes)];
      // Mostly small tensors, some near or above the limit.
      const int64_t elements = (rng() % 8 == 0)
                                   ? 1 + static_cast<int64_t>(rng() % (limit / elem + 2))
                                   : 1 + static_cast<int64_t>(rng() % 300);
      cands.push_back({static_cast<int64_t>(i) * 3 + 1, elements * elem, elem});
    }
    SCOPED_TRACE(::testing::Message() << "round " << round << " alignment " << alignment
                                      << " limit " << limit << " count " << count);
    const PackPlan plan = plan_packing(cands, alignment, limit);
    expect_consistent(plan, cands, alignment, limit);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// The engine turns each item's byte offset into a storage offset in elements (make_view divides
// by the element size), so every packed tensor must start on a multiple of its element size and
// of the requested alignment. CopyOptions only requires min_packed_alignment_bytes >= 1, so this
// must hold for alignments that are not powers of two too (e.g. 12, 24, 48, 100).
TEST(PackPlan, EveryOffsetIsAMultipleOfItsElementSizeForAnyValidAlignment) {
  for (const int64_t alignment : {3, 6, 12, 24, 48, 100}) {
    SCOPED_TRACE(::testing::Message() << "min alignment " << alignment);
    // double, complex128, float, half: each at a multiple of its element size.
    const auto cands = candidates_of({{8, 8}, {16, 16}, {8, 8}, {4, 4}, {16, 16}, {2, 2}, {8, 8}});
    const PackPlan plan = plan_packing(cands, alignment, 32 * kMiB);
    ASSERT_EQ(plan.items.size(), cands.size());
    for (size_t k = 0; k < plan.items.size(); ++k) {
      const PackItem& item = plan.items[k];
      EXPECT_EQ(item.offset % cands[k].element_size, 0)
          << "item " << k << " (element size " << cands[k].element_size << ") at offset "
          << item.offset << ": not a whole number of elements from the chunk start";
    }
  }
}

}  // namespace
}  // namespace mtc::detail
