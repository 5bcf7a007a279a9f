#include <gtest/gtest.h>

#include <set>

#include "family/copy/copy_bench.hpp"
#include "family/copy/copy_plan.hpp"

namespace xb {
namespace {

CopyConfig config(std::vector<std::string> cases) {
  CopyConfig c;
  c.cases = std::move(cases);
  c.sizes = {4096};
  c.p2p_sizes = {1 << 20};
  return c;
}

int count_case(const std::vector<CopyGroup>& g, const std::string& kase) {
  int n = 0;
  for (const auto& x : g) n += x.kase == kase;
  return n;
}

}  // namespace

TEST(CopyPlan, DefaultCasesOnEveryDevice) {
  CopyConfig c;
  c.sizes = {4096};
  const auto g = plan_copy(c, 2);
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(g[0].label(), "h2d host->0");
  EXPECT_EQ(g[1].label(), "h2d host->1");
  EXPECT_EQ(g[2].label(), "d2h 0->host");
  EXPECT_EQ(g[4].label(), "d2d 0->0");
  for (const auto& x : g) {
    EXPECT_EQ(x.legs.size(), 1u);
    EXPECT_FALSE(x.total);
  }
}

TEST(CopyPlan, P2pMatrixWithLocalReferenceAndBidir) {
  auto c = config({copy_case::p2p});
  c.bidir = true;
  const auto g = plan_copy(c, 3);
  EXPECT_EQ(count_case(g, "p2p"), 6);        // ordered pairs
  EXPECT_EQ(count_case(g, "p2p_bidir"), 3);  // unordered pairs, each measured once
  EXPECT_EQ(count_case(g, "p2p_local"), 3);
  EXPECT_EQ(g.back().kase, copy_case::p2p_local);
  for (const auto& x : g) EXPECT_EQ(x.total, x.kase == "p2p_bidir") << x.label();
}

TEST(CopyPlan, OnePairAndOneDevice) {
  auto c = config({copy_case::p2p});
  c.src = 1;
  c.dst = 0;
  c.bidir = true;
  c.p2p_sizes = {64};
  auto g = plan_copy(c, 4);
  ASSERT_EQ(g.size(), 4u);  // 1->0, 1<->0, local 0, local 1
  EXPECT_EQ(g[1].label(), "p2p_bidir 1<->0");
  EXPECT_EQ(g[1].footprint(0, 64), 128u);  // each leg's source or destination on device 0
  EXPECT_EQ(g[1].footprint(1, 64), 128u);
  EXPECT_EQ(g[1].footprint(2, 64), 0u);
  c.src.reset();
  c.dst.reset();
  g = plan_copy(c, 1);
  ASSERT_EQ(g.size(), 1u);  // the waived placeholder
  EXPECT_TRUE(g[0].legs.empty());
}

// The old plan read any two-op batch as bidirectional. A group now says what
// it is: two legs one way never make a bidir record, two legs both ways do.
TEST(CopyPlan, TwoLegsOneWayAreNotBidirectional) {
  const auto g = plan_copy(config({copy_case::all_to_host}), 2);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].kase, copy_case::all_to_host);
  EXPECT_EQ(g[0].legs.size(), 2u);
  EXPECT_FALSE(g[0].both_ways);
  EXPECT_TRUE(g[0].total);
  EXPECT_EQ(total_case(g[0].kase), "all_to_host_total");
  EXPECT_EQ(g[0].label(), "all_to_host all->host");
  for (const auto& l : g[0].legs) EXPECT_EQ(l.dst, -1);
}

TEST(CopyPlan, ConcurrentPatternsOverEveryDevice) {
  auto c = config({copy_case::host_to_all, copy_case::all_to_one, copy_case::one_to_all});
  const auto g = plan_copy(c, 3);
  ASSERT_EQ(g.size(), 1u + 3u + 3u);  // one host_to_all, one of each per device as "the one"
  EXPECT_EQ(g[0].label(), "host_to_all host->all");
  EXPECT_EQ(g[0].footprint(-1, 10), 60u);  // three host sources, each also an interferer at 2n
  EXPECT_EQ(g[1].label(), "all_to_one all->0");
  ASSERT_EQ(g[1].legs.size(), 2u);
  EXPECT_EQ(g[1].legs[0].src, 1);
  EXPECT_EQ(g[1].legs[1].src, 2);
  EXPECT_EQ(g[1].legs[0].by, std::optional<int>(1));  // write: the source pushes
  EXPECT_EQ(g[4].label(), "one_to_all 0->all");
  EXPECT_EQ(g[1].sizes, &c.p2p_sizes);  // device to device: p2p's sizes
  EXPECT_EQ(g[0].sizes, &c.sizes);
}

TEST(CopyPlan, ReadIsDrivenByTheDestination) {
  auto c = config({copy_case::p2p, copy_case::all_to_one});
  c.p2p_ops = {P2pOp::read, P2pOp::write};
  c.device = 0;  // the one of all_to_one
  const auto g = plan_copy(c, 2);
  std::set<std::string> kases;
  for (const auto& x : g) {
    kases.insert(x.kase);
    for (const auto& l : x.legs) {
      if (x.kase == "p2p_local") continue;
      const bool read = x.kase.find("_read") != std::string::npos;
      EXPECT_EQ(l.by, std::optional<int>(read ? l.dst : l.src)) << x.label();
    }
  }
  EXPECT_EQ(kases, (std::set<std::string>{"p2p_read", "p2p", "p2p_local", "all_to_one_read",
                                          "all_to_one"}));
}

TEST(CopyPlan, BidirOfHostCopiesIsOneGroupPerDevice) {
  auto c = config({copy_case::h2d, copy_case::d2h});
  c.bidir = true;
  c.device = 1;
  const auto g = plan_copy(c, 2);
  ASSERT_EQ(g.size(), 3u);  // h2d 1, h2d+d2h at once (once, not once per -t name), d2h 1
  EXPECT_EQ(g[0].label(), "h2d host->1");
  EXPECT_EQ(g[1].label(), "host_bidir host<->1");
  EXPECT_EQ(g[2].label(), "d2h 1->host");
  ASSERT_EQ(g[1].legs.size(), 2u);
  EXPECT_EQ(g[1].legs[0].dst, 1);
  EXPECT_EQ(g[1].legs[1].src, 1);
  EXPECT_TRUE(g[1].total);
  auto a = config({copy_case::all_to_host, copy_case::host_to_all});
  a.bidir = true;
  EXPECT_EQ(count_case(plan_copy(a, 3), "all_host_bidir"), 1);
}

// CUDA review 2, N5: the per-leg records of the concurrent host patterns
// are measured as nvbandwidth measures its cells, the leg at n against the
// others at 2n; the sum keeps the batch of equal sizes.
TEST(CopyPlan, HostPatternLegsAreMeasuredAgainstDoubledOthers) {
  auto c = config({copy_case::h2d, copy_case::all_to_host, copy_case::host_to_all});
  c.bidir = true;
  for (const auto& g : plan_copy(c, 2)) {
    const auto b = copy_batches(g, 10);
    if (g.legs.size() < 2) {  // h2d, d2h: one copy, one batch
      ASSERT_EQ(b.size(), 1u) << g.label();
      EXPECT_EQ(b[0].bytes, std::vector<Bytes>{10}) << g.label();
      continue;
    }
    ASSERT_TRUE(g.doubled_others) << g.label();
    ASSERT_EQ(b.size(), 1 + g.legs.size()) << g.label();
    EXPECT_EQ(b[0].bytes, std::vector<Bytes>(g.legs.size(), 10)) << g.label();
    EXPECT_TRUE(b[0].sum);
    EXPECT_TRUE(b[0].legs.empty()) << g.label();  // the sum only
    for (std::size_t i = 0; i < g.legs.size(); ++i) {
      std::vector<Bytes> want(g.legs.size(), 20);
      want[i] = 10;
      EXPECT_EQ(b[i + 1].bytes, want) << g.label() << " leg " << i;
      EXPECT_EQ(b[i + 1].legs, std::vector<std::size_t>{i});
      EXPECT_FALSE(b[i + 1].sum);
    }
    EXPECT_EQ(g.leg_bytes(10), 20u);
  }
  // host_bidir host<->0: h2d and d2h, each as its own nvbandwidth testcase
  const auto hb = plan_copy(c, 2);
  ASSERT_EQ(hb[2].label(), "host_bidir host<->0");
  EXPECT_EQ(copy_batches(hb[2], 10)[1].bytes, (std::vector<Bytes>{10, 20}));
  EXPECT_EQ(copy_batches(hb[2], 10)[2].bytes, (std::vector<Bytes>{20, 10}));
}

// nvbandwidth reports both legs of a p2p bidir at equal sizes and only the
// sum of all_to_one/one_to_all: one batch, every record, as before.
TEST(CopyPlan, DeviceToDeviceGroupsAreOneBatch) {
  auto c = config({copy_case::p2p, copy_case::all_to_one, copy_case::one_to_all});
  c.bidir = true;
  for (const auto& g : plan_copy(c, 3)) {
    if (g.legs.empty()) continue;
    EXPECT_FALSE(g.doubled_others) << g.label();
    const auto b = copy_batches(g, 10);
    ASSERT_EQ(b.size(), 1u) << g.label();
    EXPECT_EQ(b[0].bytes, std::vector<Bytes>(g.legs.size(), 10)) << g.label();
    EXPECT_EQ(b[0].legs.size(), g.legs.size()) << g.label();
    EXPECT_EQ(b[0].sum, g.total) << g.label();
    EXPECT_EQ(g.footprint(g.legs[0].src, 10), 10 * g.footprint(g.legs[0].src, 1));
  }
}

TEST(CopyPlan, EveryPatternIsOneRowWithATitle) {
  std::set<std::string> keys;
  for (const auto& p : copy_patterns()) {
    EXPECT_TRUE(keys.insert(p.key).second) << p.key;
    EXPECT_EQ(find_pattern(p.key), &p);
    EXPECT_EQ(case_title(p.key), p.title);
    const auto g = plan_copy(config({p.key}), 3);
    ASSERT_FALSE(g.empty()) << p.key;
    for (const auto& x : g) EXPECT_STREQ(x.pattern, p.key);
  }
  EXPECT_EQ(find_pattern("all_to_all"), nullptr);
  EXPECT_EQ(summed_case("p2p_bidir_total"), "p2p_bidir");
  EXPECT_EQ(summed_case("p2p_bidir"), "");
  EXPECT_NE(case_title("all_to_one_read_total").find("(sum)"), std::string::npos);
}

}  // namespace xb
