#include <gtest/gtest.h>

#include <chrono>

#include "core/error.hpp"
#include "core/sweep.hpp"

namespace xb {

TEST(Sweep, FixedSize) {
  SweepSpec s;
  s.fixed = 256;
  EXPECT_EQ(expand_sweep(s), std::vector<Bytes>{256});
}

TEST(Sweep, FactorIncludesBothEnds) {
  SweepSpec s{std::nullopt, 4096, 65536, 4.0, 0};
  EXPECT_EQ(expand_sweep(s), (std::vector<Bytes>{4096, 16384, 65536}));
}

TEST(Sweep, FactorStopsBeforePassingMax) {
  SweepSpec s{std::nullopt, 3, 100, 3.0, 0};
  EXPECT_EQ(expand_sweep(s), (std::vector<Bytes>{3, 9, 27, 81}));
}

TEST(Sweep, AscendDmiStepModeDefault) {
  SweepSpec s{std::nullopt, 2, 32ULL << 20, 2.0, 0};
  const auto v = expand_sweep(s);
  ASSERT_EQ(v.size(), 25u);
  EXPECT_EQ(v.front(), 2u);
  EXPECT_EQ(v.back(), 32ULL << 20);
}

TEST(Sweep, FixedStep) {
  SweepSpec s{std::nullopt, 1000, 4000, 0, 1000};
  EXPECT_EQ(expand_sweep(s), (std::vector<Bytes>{1000, 2000, 3000, 4000}));
}

TEST(Sweep, MinEqualsMax) {
  SweepSpec s{std::nullopt, 64, 64, 2.0, 0};
  EXPECT_EQ(expand_sweep(s), std::vector<Bytes>{64});
}

TEST(Sweep, Errors) {
  EXPECT_THROW(expand_sweep({std::nullopt, 8, 4, 2.0, 0}), UsageError);         // -b > -e
  EXPECT_THROW(expand_sweep({std::nullopt, 4, 8, 1.0, 0}), UsageError);         // factor 1
  EXPECT_THROW(expand_sweep({std::nullopt, 4, 8, 2.0, 2}), UsageError);         // both
  EXPECT_THROW(expand_sweep({std::nullopt, 0, 8, 2.0, 0}), UsageError);         // no min
  EXPECT_THROW(expand_sweep({std::nullopt, 1, 1ULL << 40, 0, 1}), UsageError);  // too many
}

// Found by fuzzing (fuzz/regressions/sweep): a factor just above 1 spun for
// billions of steps; a step rounding past -e was measured; -e beyond 2^62.
TEST(Sweep, FuzzRegressions) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(expand_sweep({std::nullopt, 1111, 1ULL << 40, 1.00000000008, 0}), UsageError);
  EXPECT_THROW(expand_sweep({std::nullopt, 1, 1, 1.000000000001, 0}), UsageError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(expand_sweep({std::nullopt, 3, 4, 1.5, 0}), std::vector<Bytes>{3});  // 4.5 -> 5 > 4
  EXPECT_EQ(expand_sweep({std::nullopt, 1000, 100000, 10, 0}),
            (std::vector<Bytes>{1000, 10000, 100000}));
  EXPECT_THROW(expand_sweep({std::nullopt, 1, (1ULL << 63) + 1, 2.0, 0}), UsageError);
}

}  // namespace xb
