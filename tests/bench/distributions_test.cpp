#include "stats/distributions.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mtc::bench {
namespace {

// Reference values from standard tables (to the digits the tables give).
TEST(Distributions, NormalQuantile) {
  EXPECT_NEAR(normal_quantile(0.975), 1.959964, 1e-6);
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-9);
  EXPECT_NEAR(normal_quantile(0.05), -1.644854, 1e-6);
}

TEST(Distributions, StudentTQuantileMatchesTables) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3027, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.7764, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 9), 2.2622, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 19), 2.0930, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.95, 5), 2.0150, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.025, 9), -2.2622, 1e-4);
  // Many degrees of freedom: the normal.
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.95996, 1e-4);
}

TEST(Distributions, CdfAndQuantileAreInverse) {
  for (double dof : {3.0, 7.5, 30.0}) {
    for (double p : {0.01, 0.2, 0.5, 0.9, 0.999}) {
      EXPECT_NEAR(student_t_cdf(student_t_quantile(p, dof), dof), p, 1e-9) << dof << " " << p;
    }
  }
}

TEST(Distributions, InvalidArgumentsGiveNaN) {
  EXPECT_TRUE(std::isnan(student_t_quantile(0.0, 3)));
  EXPECT_TRUE(std::isnan(student_t_quantile(0.5, 0)));
  EXPECT_TRUE(std::isnan(normal_quantile(1.0)));
}

}  // namespace
}  // namespace mtc::bench
