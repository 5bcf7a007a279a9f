// doctor's judgement (pure) and the host backend's throttle knob.
#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "backend/host/throttle.hpp"
#include "core/error.hpp"
#include "family/doctor/doctor_checks.hpp"

namespace xb {

TEST(DoctorLinks, SysfsSpeedsAndWhatALinkGives) {
  EXPECT_EQ(parse_link_speed("32.0 GT/s PCIe"), 32.0);
  EXPECT_EQ(parse_link_speed("8 GT/s"), 8.0);
  EXPECT_EQ(parse_link_speed("2.5 GT/s PCIe"), 2.5);
  EXPECT_FALSE(parse_link_speed("Unknown"));
  EXPECT_FALSE(parse_link_speed(""));
  EXPECT_FALSE(parse_link_speed("16"));
  // An H200's Gen5 x16: 63.0 GB/s raw per direction (the figure topo prints).
  EXPECT_NEAR(pcie_lane_gbps(32.0) * 16, 63.015, 0.01);
  EXPECT_NEAR(pcie_lane_gbps(16.0) * 8, 15.75, 0.01);  // Gen4 x8: a link trained low
  EXPECT_NEAR(pcie_lane_gbps(2.5), 0.25, 1e-9);        // 8b/10b
  EXPECT_NEAR(pcie_lane_gbps(64.0), 64.0 * 242 / 256 / 8, 1e-9);  // FLIT
  EXPECT_EQ(pcie_generation(32.0), "Gen5");
  EXPECT_EQ(pcie_generation(8.0), "Gen3");
  // Recorded CUDA attributes of an H200: 3.2 GHz memory clock, 6144-bit bus.
  EXPECT_NEAR(memory_peak_gbps(3201000, 6144), 4917.1, 0.5);
}

TEST(DoctorLinks, NvlinkRatesAndCounts) {
  // An H200 / H100 (compute 9.0) behind NVSwitch: 18 links x 25 GB/s per direction,
  // 450 GB/s raw, 360 GB/s expected of a copy.
  EXPECT_EQ(nvlink_link_gbps(9, 0), 25);
  EXPECT_EQ(nvlink_count("NV18 (NVLink x18 via NVSwitch)"), 18);
  EXPECT_DOUBLE_EQ(*nvlink_count("NV18 (NVLink x18 via NVSwitch)") * nvlink_link_gbps(9, 0) *
                       kNvlinkEfficiency,
                   360);
  EXPECT_EQ(nvlink_link_gbps(8, 0), 25);  // A100: 12 links, 600 GB/s both directions
  EXPECT_EQ(nvlink_link_gbps(7, 0), 25);  // V100: 6 links, 300 GB/s both directions
  EXPECT_EQ(nvlink_link_gbps(6, 0), 20);  // P100
  EXPECT_EQ(nvlink_link_gbps(10, 0), 50);  // B200: 18 links, 1.8 TB/s both directions
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(8, 6) * 4 * 2, 112.5);  // RTX 3090 bridge
  EXPECT_EQ(nvlink_link_gbps(8, 9), 0);   // Ada: no NVLink
  EXPECT_EQ(nvlink_link_gbps(7, 5), 0);   // Turing (bridges not modelled)
  EXPECT_EQ(nvlink_link_gbps(12, 0), 0);  // consumer Blackwell
  EXPECT_EQ(nvlink_count("NV4 (NVLink x4)"), 4);
  EXPECT_FALSE(nvlink_count("NVLink (NVML P2P status; link count unknown)"));
  EXPECT_FALSE(nvlink_count("PHB (PCIe host bridge)"));
  EXPECT_FALSE(nvlink_count("NODE (PCIe through the CPU)"));
  EXPECT_FALSE(nvlink_count("NV"));
  EXPECT_FALSE(nvlink_count("NV0"));
  EXPECT_FALSE(nvlink_count(""));
}

TEST(DoctorClocks, HeldDownTimeAndItsGrade) {
  // Counters as NVML's violation status gives them (cumulative seconds).
  const auto holds = [](double power, double thermal, double board) {
    ClockHolds h;
    h.known = true;
    h.power_s = power;
    h.thermal_s = thermal;
    h.board_s = board;
    return h;
  };
  const ClockHolds before = holds(120.0, 4.0, 0.0);
  const auto held = clock_held(before, holds(123.5, 4.5, 0.0));
  ASSERT_TRUE(held);
  EXPECT_DOUBLE_EQ(held->seconds, 3.5);
  EXPECT_EQ(held->cause, "power limit");
  const auto thermal = clock_held(before, holds(120.0, 12.0, 1.0));
  ASSERT_TRUE(thermal);
  EXPECT_EQ(thermal->cause, "thermal limit");
  const auto none = clock_held(before, before);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->seconds, 0);
  EXPECT_FALSE(clock_held(before, holds(1.0, 4.0, 0.0)));  // the driver reloaded
  EXPECT_EQ(grade_clock_hold(0.5, 41), Verdict::pass);    // 1 %
  EXPECT_EQ(grade_clock_hold(3.5, 41), Verdict::warn);    // 9 %
  EXPECT_EQ(grade_clock_hold(10, 41), Verdict::fail);     // 24 %
  EXPECT_EQ(grade_clock_hold(1, 0), Verdict::none);
}

TEST(DoctorGrades, RatiosAndPeers) {
  EXPECT_EQ(grade(0.95), Verdict::pass);
  EXPECT_EQ(grade(0.8), Verdict::pass);
  EXPECT_EQ(grade(0.6), Verdict::warn);
  EXPECT_EQ(grade(0.4), Verdict::fail);
  EXPECT_EQ(grade(0), Verdict::fail);
  EXPECT_EQ(grade(0.25, 0.3, 0.1), Verdict::warn);
  EXPECT_TRUE(peer_ratios({5}).empty());
  const auto two = peer_ratios({4, 10});  // two peers: against the best
  EXPECT_DOUBLE_EQ(two[0], 0.4);
  EXPECT_DOUBLE_EQ(two[1], 1.0);
  const auto three = peer_ratios({10, 4, 9});  // three or more: against the median
  EXPECT_NEAR(three[1], 4.0 / 9, 1e-12);
  EXPECT_NEAR(three[0], 10.0 / 9, 1e-12);
  const auto four = peer_ratios({10, 10, 3, 10});
  EXPECT_DOUBLE_EQ(four[2], 0.3);
  EXPECT_STREQ(to_string(Verdict::none), "-");
}

TEST(HostThrottle, ParsesDevicesDirectionsAndPairs) {
  using host::parse_throttle;
  using host::throttle_factor;
  const auto t = parse_throttle("1:0.4,2:0.5:h2d,0-3:0.25");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(throttle_factor(t, "d2d", 1, 1), 0.4);
  EXPECT_DOUBLE_EQ(throttle_factor(t, "p2p", 0, 1), 0.4);
  EXPECT_DOUBLE_EQ(throttle_factor(t, "h2d", -1, 2), 0.5);
  EXPECT_DOUBLE_EQ(throttle_factor(t, "d2h", 2, -1), 1.0);
  EXPECT_DOUBLE_EQ(throttle_factor(t, "p2p", 3, 0), 0.25);
  EXPECT_DOUBLE_EQ(throttle_factor(t, "p2p", 0, 2), 1.0);
  EXPECT_DOUBLE_EQ(throttle_factor(t, "d2d", 0, 0), 1.0);  // a pair throttles p2p only
  EXPECT_DOUBLE_EQ(throttle_factor(t, "p2p", 1, 3), 0.4);  // device 1 only: 0-3 is another pair
  for (const char* bad : {"x", "1", "1:0", "1:1.5", "1:0.5:up", "-1:0.5", "0-:0.5", "0-1:0.5:h2d",
                          "1:0.5x"})
    EXPECT_THROW(parse_throttle(bad), UsageError) << bad;
  EXPECT_TRUE(parse_throttle("").empty());
  // host: the default (unbound) host memory, not memory bound to a device's node.
  const auto h = parse_throttle("host:0.5");
  EXPECT_DOUBLE_EQ(throttle_factor(h, "h2d", -1, 0), 0.5);
  EXPECT_DOUBLE_EQ(throttle_factor(h, "h2d", 0, 0), 1.0);
  EXPECT_THROW(parse_throttle("host-1:0.5"), UsageError);
}

}  // namespace xb
