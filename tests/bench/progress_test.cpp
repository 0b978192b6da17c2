#include "runner/measure/progress.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace mtc::bench {
namespace {

TEST(Progress, RendersBarSamplesAndNoise) {
  EXPECT_EQ(Progress::render("[1/9] h2d to", 42, 0.0123, 0.5, 10),
            "[1/9] h2d to [#####.....] 42 samples, noise 1.23 %");
  EXPECT_EQ(Progress::render("x", 0, 5.0, 2.0, 4), "x [####] 0 samples, noise 100.00 %");
  EXPECT_EQ(Progress::render("x", 3, -1.0, 0.0, 2),
            "x [..] 3 samples, noise --");  // not evaluated yet
}

TEST(Progress, SilentWhenNotATerminal) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    Progress progress(true, file);
    EXPECT_FALSE(progress.enabled());
    progress.begin_case("case");
    progress.update(1, 0.5, 0.1);
    progress.end_case();
  }
  EXPECT_EQ(std::ftell(file), 0);
  std::fclose(file);
}

}  // namespace
}  // namespace mtc::bench
