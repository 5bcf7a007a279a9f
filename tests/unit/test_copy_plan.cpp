#include <gtest/gtest.h>

#include "family/copy/copy_plan.hpp"

namespace xb {

TEST(CopyPlan, DefaultCasesOnEveryDevice) {
  CopyConfig c;
  c.sizes = {4096};
  const auto g = plan_copy(c, 2);
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(g[0].label(), "h2d host->0");
  EXPECT_EQ(g[1].label(), "h2d host->1");
  EXPECT_EQ(g[2].label(), "d2h 0->host");
  EXPECT_EQ(g[4].label(), "d2d 0->0");
}

TEST(CopyPlan, P2pMatrixWithLocalReferenceAndBidir) {
  CopyConfig c;
  c.cases = {CopyCase::p2p};
  c.bidir = true;
  c.p2p_sizes = {1 << 20};
  const auto g = plan_copy(c, 3);
  int uni = 0, bidir = 0, local = 0;
  for (const auto& x : g) {
    if (x.flow == Flow::uni) ++uni;
    if (x.flow == Flow::bidir) ++bidir;
    if (x.flow == Flow::local) ++local;
  }
  EXPECT_EQ(uni, 6);    // ordered pairs
  EXPECT_EQ(bidir, 3);  // unordered pairs, each measured once
  EXPECT_EQ(local, 3);
  EXPECT_EQ(g.back().record_case(), std::string("p2p_local"));
}

TEST(CopyPlan, OnePairAndOneDevice) {
  CopyConfig c;
  c.cases = {CopyCase::p2p};
  c.src = 1;
  c.dst = 0;
  c.bidir = true;
  c.p2p_sizes = {64};
  auto g = plan_copy(c, 4);
  ASSERT_EQ(g.size(), 4u);  // 1->0, 1<->0, local 0, local 1
  EXPECT_EQ(g[1].label(), "p2p_bidir 1<->0");
  EXPECT_EQ(g[1].footprint(64), 256u);
  c.src.reset();
  c.dst.reset();
  g = plan_copy(c, 1);
  ASSERT_EQ(g.size(), 1u);  // the waived placeholder
  EXPECT_EQ(g[0].src, -1);
}

}  // namespace xb
