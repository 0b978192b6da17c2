// build_options_for: the builder's byte limit lowered to the machine's memory, shared by the
// workloads a run holds at once, and said in the error.
#include "runner/commands/build_limits.h"

#include <gtest/gtest.h>

namespace mtc::bench {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(BuildLimits, AMachineSmallerThanTheBuildLimitLowersIt) {
  // A 24 GiB machine took a 64 GiB limit: a config within it exhausted the machine first.
  const BuildOptions one = build_options_for(24 * kGiB, 1, true);
  EXPECT_EQ(one.max_bytes, 24 * kGiB);
  EXPECT_TRUE(one.cuda_available);
  EXPECT_EQ(one.max_bytes_origin, "this machine's memory, 25769803776 bytes");
  const BuildOptions eight = build_options_for(24 * kGiB, 8, false);
  EXPECT_EQ(eight.max_bytes, 3 * kGiB);
  EXPECT_EQ(eight.max_bytes_origin,
            "this machine's memory, 25769803776 bytes, shared by the 8 inputs of the step "
            "patterns");
}

TEST(BuildLimits, ALargeOrUnknownMachineKeepsTheBuildersLimits) {
  const BuildOptions builder;
  for (const uint64_t memory : {uint64_t{0}, 1024 * kGiB}) {
    const BuildOptions options = build_options_for(memory, 1, false);
    EXPECT_EQ(options.max_bytes, builder.max_bytes) << memory;
    EXPECT_EQ(options.max_nodes, builder.max_nodes) << memory;
    EXPECT_EQ(options.max_bytes_origin, builder.max_bytes_origin) << memory;
  }
}

}  // namespace
}  // namespace mtc::bench
