#include <gtest/gtest.h>

#include <cmath>

#include "core/record.hpp"
#include "core/stats.hpp"

namespace xb {

TEST(Stats, OrderStatisticsOfUnsortedSamples) {
  const std::vector<double> v{5, 1, 4, 2, 3};
  const Stats s = compute_stats(v);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.p99, 4.96);  // 1% short of the max, interpolated
  EXPECT_NEAR(s.cv, std::sqrt(2.5) / 3.0, 1e-12);
}

TEST(Stats, EvenCountMedianInterpolates) {
  const std::vector<double> v{10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(compute_stats(v).median, 25);
}

TEST(Stats, SingleAndEmpty) {
  const std::vector<double> one{7.5};
  const Stats s = compute_stats(one);
  EXPECT_DOUBLE_EQ(s.min, 7.5);
  EXPECT_DOUBLE_EQ(s.p99, 7.5);
  EXPECT_DOUBLE_EQ(s.cv, 0);
  EXPECT_DOUBLE_EQ(compute_stats({}).median, 0);
}

TEST(Record, BandwidthFromMedianAndMin) {
  Record r;
  r.bytes = 1000000;
  const std::vector<double> us{100, 200, 400};
  r.set_samples(us);
  EXPECT_EQ(r.iters, 3);
  EXPECT_DOUBLE_EQ(r.gbps_median, 1e6 / 200e-6 / 1e9);  // 5 GB/s
  EXPECT_DOUBLE_EQ(r.gbps_max, 10.0);
}

}  // namespace xb
