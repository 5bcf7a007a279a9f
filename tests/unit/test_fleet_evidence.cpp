// fleet's counter evidence: the NIC error counters that grew during the
// pairs, appended to the host and link rows they concern, and no other.
#include <gtest/gtest.h>

#include "family/fleet/fleet_evidence.hpp"
#include "family/fleet/fleet_pairs.hpp"
#include "family/fleet/fleet_rails.hpp"

namespace xb {
namespace {

FleetJudgement rows() {
  FleetJudgement j;
  j.findings = {{"host", "A", Verdict::pass, 1, 1, "GB/s", "typical"},
                {"host", "B", Verdict::fail, 0.1, 1, "GB/s", "slow"},
                {"host", "C", Verdict::pass, 1, 1, "GB/s", "typical"},
                {"link", "A<->B", Verdict::fail, 0.1, 1, "GB/s", "slow link"},
                {"link", "A<->C", Verdict::pass, 1, 1, "GB/s", "fine"},
                {"fleet", "all", Verdict::none, 1, 0, "GB/s", "reference"}};
  return j;
}

TEST(FleetEvidence, ErrorsThatGrewGoToTheHostAndItsLinkOnly) {
  FleetJudgement j = rows();
  PairFigures ab(0, 1, 1, 0.1);
  ab.b_errors = {{"mlx5_0:1 symbol_error", 412}};
  PairFigures ac(0, 2, 1, 1);
  add_counter_evidence(j, {"A", "B", "C"}, {ab, ac});
  EXPECT_NE(j.findings[1].why.find("during its pairs: mlx5_0:1 symbol_error +412"),
            std::string::npos)
      << j.findings[1].why;
  EXPECT_NE(j.findings[3].why.find("during the pair: B: mlx5_0:1 symbol_error +412"),
            std::string::npos)
      << j.findings[3].why;
  EXPECT_EQ(j.findings[0].why, "typical");  // A's own NIC counted no errors
  EXPECT_EQ(j.findings[2].why, "typical");
  EXPECT_EQ(j.findings[4].why, "fine");
  EXPECT_EQ(j.findings[5].why, "reference");
}

TEST(FleetEvidence, ALinkNamedTheOtherWayRoundGetsItToo) {
  FleetJudgement j;
  j.findings = {{"link", "B<->A", Verdict::fail, 0.1, 1, "GB/s", "slow link"}};
  PairFigures ab(0, 1, 1, 0.1);
  ab.a_errors = {{"xb0 rx_crc_errors", 7}};
  add_counter_evidence(j, {"A", "B"}, {ab});
  EXPECT_NE(j.findings[0].why.find("A: xb0 rx_crc_errors +7"), std::string::npos)
      << j.findings[0].why;
}

TEST(FleetEvidence, AHostsCountsAreSummedOverItsPairs) {
  FleetJudgement j;
  j.findings = {{"host", "A", Verdict::fail, 0.1, 1, "GB/s", "slow"}};
  std::vector<PairFigures> figs;
  for (int k = 1; k <= 5; ++k) {
    PairFigures f(0, k, 0.1, 0.1);
    f.a_errors = {{"eth0 rx_errors", k}};
    if (k == 5) f.a_errors["eth0 b"] = 1, f.a_errors["eth0 c"] = 1, f.a_errors["eth0 d"] = 1;
    figs.push_back(f);
  }
  add_counter_evidence(j, {"A", "B", "C", "D", "E", "F"}, figs);
  EXPECT_NE(j.findings[0].why.find("eth0 rx_errors +15"), std::string::npos) << j.findings[0].why;
  EXPECT_NE(j.findings[0].why.find("(and 1 more)"), std::string::npos) << j.findings[0].why;
}

TEST(FleetEvidence, ARailThatTookAnotherNicIsAWarnRowOfItsHostOnce) {
  FleetJudgement j = rows();
  PairFigures ab(0, 1, 1, 1), cb(2, 1, 1, 1);
  ab.b_astray = "nic xb1 moved 0.0 MB of 4.2 MB: its bytes went through xb0 (4.3 MB)";
  cb.b_astray = "again";
  add_counter_evidence(j, {"A", "B", "C"}, {ab, cb});
  ASSERT_EQ(j.findings.size(), 7u);
  const Finding& w = j.findings.back();
  EXPECT_EQ(w.check, "rail");
  EXPECT_EQ(w.where, "B");
  EXPECT_EQ(w.verdict, Verdict::warn);
  EXPECT_NE(w.why.find("went through xb0"), std::string::npos) << w.why;
}

TEST(FleetEvidence, NoCountersNoChange) {
  FleetJudgement j = rows();
  add_counter_evidence(j, {"A", "B", "C"}, {PairFigures(0, 1, 1, 0.1)});
  EXPECT_EQ(j.findings[1].why, "slow");
  EXPECT_EQ(j.findings[3].why, "slow link");
}

TEST(FleetPairs, NicCountsTravelWithASide) {
  PairSide s;
  s.nics = {{"xb1", 4194304, 2048, {}, ""},
            {"xb1", 1024, 4194304, {{"rx_errors", 3}}, "went through xb0 (4.2 MB)"},
            {}};
  const PairSide back = side_from_wire(side_to_wire(s));
  ASSERT_EQ(back.nics.size(), 3u);
  EXPECT_EQ(back.nics[0].nic, "xb1");
  EXPECT_EQ(back.nics[0].tx, 4194304u);
  EXPECT_EQ(back.nics[1].rx, 4194304u);
  ASSERT_EQ(back.nics[1].errors.size(), 1u);
  EXPECT_EQ(back.nics[1].errors[0].first, "rx_errors");
  EXPECT_EQ(back.nics[1].errors[0].second, 3u);
  EXPECT_EQ(back.nics[1].warning, "went through xb0 (4.2 MB)");
  EXPECT_TRUE(back.nics[2].nic.empty());
}

TEST(FleetRails, ALabelParsesBackIntoItsParts) {
  const auto r = parse_rail_label(rail_label("vm#3", 1, "mlx5_1:1"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->host, "vm#3");
  EXPECT_EQ(r->rail, 1);
  EXPECT_EQ(r->nic, "mlx5_1:1");
  const auto own = parse_rail_label("rail 12 (eth1)");
  ASSERT_TRUE(own);
  EXPECT_EQ(own->host, "");
  EXPECT_EQ(own->rail, 12);
  EXPECT_EQ(own->nic, "eth1");
  EXPECT_FALSE(parse_rail_label("vm3"));
  EXPECT_FALSE(parse_rail_label("guardrail 1 (x)"));
  EXPECT_FALSE(parse_rail_label("vm3 rail x (eth0)"));
  EXPECT_FALSE(parse_rail_label("all"));
}

}  // namespace
}  // namespace xb
