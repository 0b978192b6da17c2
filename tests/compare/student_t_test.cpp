#include "compare/student_t.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace mtc::bench::compare {
namespace {

// Reference quantiles from statistical tables (scipy.stats.t.ppf agrees to every digit shown).
TEST(StudentT, QuantilesMatchTables) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062047362, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3026527297, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 3), 3.1824463053, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 5), 2.5705818366, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.2281388520, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0422724563, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.95, 4), 2.1318467863, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.995, 7), 3.4994832974, 1e-8);
  // Non-integer degrees of freedom (checked by integrating the density numerically).
  EXPECT_NEAR(student_t_quantile(0.9, 2.5), 1.7302509, 1e-6);
}

TEST(StudentT, ClosedFormsForOneAndTwoDegrees) {
  for (double p : {0.01, 0.2, 0.6, 0.9, 0.999}) {
    EXPECT_NEAR(student_t_quantile(p, 1), std::tan(std::numbers::pi * (p - 0.5)), 1e-9) << p;
    EXPECT_NEAR(student_t_quantile(p, 2), (2 * p - 1) / std::sqrt(2 * p * (1 - p)), 1e-9) << p;
  }
}

TEST(StudentT, SymmetricAndApproachesTheNormal) {
  EXPECT_EQ(student_t_quantile(0.5, 4), 0.0);
  EXPECT_NEAR(student_t_quantile(0.025, 6), -student_t_quantile(0.975, 6), 1e-12);
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.959964, 1e-5);
}

TEST(StudentT, CdfInvertsTheQuantile) {
  for (double dof : {1.0, 3.0, 9.0, 50.0}) {
    for (double p : {0.001, 0.05, 0.5, 0.8, 0.975}) {
      EXPECT_NEAR(student_t_cdf(student_t_quantile(p, dof), dof), p, 1e-10) << dof << " " << p;
    }
  }
  EXPECT_EQ(student_t_cdf(INFINITY, 3), 1.0);
  EXPECT_EQ(student_t_cdf(-INFINITY, 3), 0.0);
}

TEST(StudentT, TwoSidedMultiplier) {
  EXPECT_NEAR(student_t_two_sided(0.95, 5), 2.5705818366, 1e-8);
  EXPECT_NEAR(student_t_two_sided(0.90, 4), 2.1318467863, 1e-8);
}

TEST(StudentT, RejectsArgumentsOutsideTheDomain) {
  EXPECT_THROW(student_t_quantile(0.0, 3), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(1.0, 3), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.5, 0), std::invalid_argument);
  EXPECT_THROW(student_t_two_sided(1.5, 3), std::invalid_argument);
}

}  // namespace
}  // namespace mtc::bench::compare
