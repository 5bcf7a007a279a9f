// doctor's judgement (pure), its table of checks, a small run on the host
// backend, and the host backend's throttle knob.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "backend/backend.hpp"
#include "backend/common/nvlink.hpp"
#include "backend/host/throttle.hpp"
#include "backend/select/select.hpp"
#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "family/doctor/doctor_checks.hpp"
#include "family/doctor/doctor_context.hpp"
#include "family/doctor/doctor_rounds.hpp"
#include "family/doctor/doctor_run.hpp"

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
  EXPECT_NEAR(pcie_lane_gbps(16.0) * 8, 15.75, 0.01);             // Gen4 x8: a link trained low
  EXPECT_NEAR(pcie_lane_gbps(2.5), 0.25, 1e-9);                   // 8b/10b
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
  EXPECT_DOUBLE_EQ(
      *nvlink_count("NV18 (NVLink x18 via NVSwitch)") * nvlink_link_gbps(9, 0) * kNvlinkEfficiency,
      360);
  EXPECT_EQ(nvlink_link_gbps(8, 0), 25);   // A100: 12 links, 600 GB/s both directions
  EXPECT_EQ(nvlink_link_gbps(7, 0), 25);   // V100: 6 links, 300 GB/s both directions
  EXPECT_EQ(nvlink_link_gbps(6, 0), 20);   // P100
  EXPECT_EQ(nvlink_link_gbps(10, 0), 50);  // B200: 18 links, 1.8 TB/s both directions
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(8, 6) * 4 * 2, 112.5);  // RTX 3090 bridge
  EXPECT_EQ(nvlink_link_gbps(8, 9), 0);                     // Ada: no NVLink
  EXPECT_EQ(nvlink_link_gbps(7, 5), 0);                     // Turing (bridges not modelled)
  // Xavier (7.2) has no NVLink, yet gets V100's rate: only read for a pair
  // NVML counts NVLinks on, which an SoC never has (doctor_checks.cpp says so).
  EXPECT_EQ(nvlink_link_gbps(7, 2), 25);
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
  EXPECT_EQ(grade_clock_hold(0.5, 41), Verdict::pass);     // 1 %
  EXPECT_EQ(grade_clock_hold(3.5, 41), Verdict::warn);     // 9 %
  EXPECT_EQ(grade_clock_hold(10, 41), Verdict::fail);      // 24 %
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
  for (const char* bad :
       {"x", "1", "1:0", "1:1.5", "1:0.5:up", "-1:0.5", "0-:0.5", "0-1:0.5:h2d", "1:0.5x"})
    EXPECT_THROW(parse_throttle(bad), UsageError) << bad;
  EXPECT_TRUE(parse_throttle("").empty());
  // host: the default (unbound) host memory, not memory bound to a device's node.
  const auto h = parse_throttle("host:0.5");
  EXPECT_DOUBLE_EQ(throttle_factor(h, "h2d", -1, 0), 0.5);
  EXPECT_DOUBLE_EQ(throttle_factor(h, "h2d", 0, 0), 1.0);
  EXPECT_THROW(parse_throttle("host-1:0.5"), UsageError);
}

TEST(HostThrottle, EntriesMustNameSomethingOfTheRun) {
  using host::check_throttle_targets;
  using host::parse_throttle;
  const auto ok = [](const char* text, int devices, int ranks) {
    check_throttle_targets(text, parse_throttle(text), devices, ranks);
  };
  EXPECT_NO_THROW(ok("1:0.4,0-1:0.5,host:0.5,rank1:0.5:tx,rank0-rank1:0.5", 2, 2));
  for (const char* bad : {"2:0.4", "0-5:0.5", "0-0:0.5", "rank2:0.5", "rank1-rank1:0.5",
                          "rank0-rank7:0.5", "0:0.5,2:0.5:h2d"})
    EXPECT_THROW(ok(bad, 2, 2), UsageError) << bad;
  EXPECT_THROW(ok("1:0.4", 1, 1), UsageError);
  try {
    ok("rank9:0.5", 1, 1);
    ADD_FAILURE() << "rank9:0.5 in a 1-rank run accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "XFERBENCH_HOST_THROTTLE='rank9:0.5': 'rank9:0.5' names rank 9, but this run has "
                 "1 rank (0..0)");
  }
}

TEST(HostThrottle, RanksSlowWhatTheySendReceiveOrShare) {
  using host::parse_throttle;
  using host::rank_throttle;
  using host::throttle_factor;
  const auto t = parse_throttle("rank3:0.1:tx,rank1-rank2:0.2,rank4:0.5,rank0:0.25:rx");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_DOUBLE_EQ(rank_throttle(t, 3, 0), 0.1 * 0.25);  // 3 sends, 0 receives
  EXPECT_DOUBLE_EQ(rank_throttle(t, 0, 3), 1.0);         // 3 receives: tx only
  EXPECT_DOUBLE_EQ(rank_throttle(t, 1, 2), 0.2);
  EXPECT_DOUBLE_EQ(rank_throttle(t, 2, 1), 0.2);
  EXPECT_DOUBLE_EQ(rank_throttle(t, 1, 3), 1.0);
  EXPECT_DOUBLE_EQ(rank_throttle(t, 4, 1), 0.5);
  EXPECT_DOUBLE_EQ(rank_throttle(t, 1, 4), 0.5);
  // Rank entries never touch the copies of a device with that number.
  EXPECT_DOUBLE_EQ(throttle_factor(t, "d2d", 3, 3), 1.0);
  EXPECT_DOUBLE_EQ(throttle_factor(t, "p2p", 1, 2), 1.0);
  for (const char* bad : {"rank:0.5", "rankx:0.5", "rank1:0.5:h2d", "rank1-2:0.5",
                          "rank1-rank2:0.5:tx", "rank1:2", "rank-1:0.5"})
    EXPECT_THROW(parse_throttle(bad), UsageError) << bad;
}

// ---- judging on a busy node ----

TEST(DoctorNoise, MedianIntervalFromOrderStatistics) {
  // 5 values: the 90 % interval of the median is [min, max] (coverage 94 %).
  const Interval five = median_interval({0.9, 0.2, 1.0, 0.95, 1.1});
  EXPECT_DOUBLE_EQ(five.median, 0.95);
  EXPECT_DOUBLE_EQ(five.lo, 0.2);
  EXPECT_DOUBLE_EQ(five.hi, 1.1);
  // 10 values: [x(2), x(9)] (coverage 98 %): one outlier each side drops out.
  const Interval ten = median_interval({0.1, 1, 1, 1, 1, 1, 1, 1, 1, 9});
  EXPECT_DOUBLE_EQ(ten.lo, 1);
  EXPECT_DOUBLE_EQ(ten.hi, 1);
  // 20 values: [x(6), x(15)].
  std::vector<double> twenty;
  for (int i = 1; i <= 20; ++i) twenty.push_back(i);
  const Interval t = median_interval(twenty);
  EXPECT_DOUBLE_EQ(t.lo, 6);
  EXPECT_DOUBLE_EQ(t.hi, 15);
  EXPECT_DOUBLE_EQ(t.median, 10.5);
  const Interval one = median_interval({3});
  EXPECT_DOUBLE_EQ(one.lo, 3);
  EXPECT_DOUBLE_EQ(one.hi, 3);
  EXPECT_DOUBLE_EQ(median_interval({}).median, 0);
}

// Paired ratios (h2d / d2h of one healthy device) shaped like those measured
// with the mixed load of busy_node.sh beside doctor --quick on the 2-core VM:
// CV 20-50 %, a burst now and then on one side of a round.
const std::vector<double> kNoisyHealthy = {1.04, 0.41, 0.97, 1.62, 0.93, 0.45, 1.21};
// The same comparison with one side slowed to 25 %: noisy, but every round low.
const std::vector<double> kNoisySlow = {0.24, 0.31, 0.19, 0.42, 0.27, 0.22, 0.36};

TEST(DoctorNoise, ANoisyComparisonNeverFails) {
  const Judgement healthy = judge(kNoisyHealthy, Grade{});
  EXPECT_NE(healthy.verdict, Verdict::fail);
  EXPECT_FALSE(healthy.settled);  // 0.41 .. 1.62 spans every grade
  // A median below the FAIL line, its interval reaching PASS: at most WARN.
  const Judgement low = judge({0.3, 0.45, 0.9, 0.48, 1.1}, Grade{});
  EXPECT_DOUBLE_EQ(low.ratio.median, 0.48);
  EXPECT_FALSE(low.settled);
  EXPECT_EQ(low.verdict, Verdict::warn);
}

TEST(DoctorNoise, AClearGapFailsEvenWhenNoisy) {
  const Judgement slow = judge(kNoisySlow, Grade{});
  EXPECT_TRUE(slow.settled);
  EXPECT_EQ(slow.verdict, Verdict::fail);
  const Judgement clean = judge({0.25, 0.26, 0.25, 0.24, 0.25}, Grade{});
  EXPECT_EQ(clean.verdict, Verdict::fail);
  EXPECT_TRUE(clean.settled);
  const Judgement fine = judge({0.98, 1.0, 0.97, 1.01, 0.99}, Grade{});
  EXPECT_EQ(fine.verdict, Verdict::pass);
  EXPECT_TRUE(fine.settled);
  EXPECT_EQ(judge({}, Grade{}).verdict, Verdict::none);
}

TEST(DoctorNoise, AFailMustReproduce) {
  const Judgement first = judge(kNoisySlow, Grade{});
  const Grade g;
  EXPECT_EQ(confirm_fail(first, judge({0.25, 0.26, 0.25, 0.24, 0.25}, g), g), Verdict::fail);
  EXPECT_EQ(confirm_fail(first, judge({0.98, 1.0, 0.97, 1.01, 0.99}, g), g), Verdict::warn);
  EXPECT_EQ(confirm_fail(first, judge(kNoisyHealthy, g), g), Verdict::warn);
  EXPECT_EQ(confirm_fail(judge(kNoisyHealthy, g), first, g), Verdict::warn);
  // Measured again under bursts (a slowed reference lifts a few rounds above
  // 0.5): its median still fails, and both measurements together settle it.
  const Judgement bursty = judge({0.22, 0.61, 0.25, 0.68, 0.24}, g);
  EXPECT_FALSE(bursty.settled);
  EXPECT_EQ(confirm_fail(first, bursty, g), Verdict::fail);
}

// A copier whose copies take bytes / (gbps x noise) with noise drawn from a
// seeded log-normal of the given CV, and now and then a burst (a 4x slower
// copy), as a busy node gives them.
class NoisyCopier final : public Copier {
 public:
  NoisyCopier(double gbps, double cv, std::uint32_t seed) : gbps_(gbps), rng_(seed) {
    const double s = std::sqrt(std::log(1 + cv * cv));
    noise_ = std::lognormal_distribution<double>(-s * s / 2, s);
  }
  Method method() const override { return Method::dma; }
  CopyTiming run(std::span<const CopyOp> ops) override {
    CopyTiming t;
    for (const CopyOp& op : ops) {
      double g = gbps_ * noise_(rng_);
      if (burst_(rng_) < 0.1) g /= 4;
      t.op_us.push_back(static_cast<double>(op.bytes) / (g * 1e3));
      t.batch_us = std::max(t.batch_us, t.op_us.back());
    }
    return t;
  }

 private:
  double gbps_;
  std::mt19937 rng_;
  std::lognormal_distribution<double> noise_;
  std::uniform_real_distribution<double> burst_{0, 1};
};

// The whole judgement as doctor runs it: paired rounds until settled, and a
// FAIL measured again, over many seeded runs of a noisy node.
Verdict judge_as_doctor(double a_gbps, double b_gbps, double cv, std::uint32_t seed) {
  NoisyCopier ca(a_gbps, cv, seed), cb(b_gbps, cv, seed * 7919 + 1);
  Probe a, b;
  a.label = "a";
  b.label = "b";
  a.copier = &ca;
  b.copier = &cb;
  a.ops = b.ops = {CopyOp{nullptr, nullptr, 16ULL << 20}};
  a.seeds = b.seeds = {0};
  PairedCheck c(
      "direction", "a/b", "GB/s", Grade{}, {&a, &b},
      [&](std::size_t i) { return std::pair(a.sample(0, i), b.sample(0, i)); },
      [](Verdict, double, double, double) { return std::string(); });
  const Budget budget{5, 0, 2, 1.0, 40};  // the copier is instant: max_rounds bounds it
  settle({&a, &b}, {&c}, budget);
  const Judged first = evaluate(c);
  if (first.judgement.verdict != Verdict::fail) return first.judgement.verdict;
  return confirm_fail(first.judgement, remeasure(c, budget).judgement, Grade{});
}

TEST(DoctorNoise, BusyNodeHealthyPairsNeverFailAndSlowOnesAlwaysDo) {
  int healthy_fail = 0, slow_fail = 0;
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    healthy_fail += judge_as_doctor(8.0, 8.0, 0.5, seed) == Verdict::fail;
    slow_fail += judge_as_doctor(2.0, 8.0, 0.3, seed) == Verdict::fail;
  }
  EXPECT_EQ(healthy_fail, 0);
  EXPECT_EQ(slow_fail, 300);
}

TEST(DoctorNoise, ASingleMeasurementOnABusyNodeCannotConvict) {
  EXPECT_TRUE(too_busy_to_judge(1.8, 2, 0.02));   // the engine's selftest beside the mixed load
  EXPECT_TRUE(too_busy_to_judge(0.0, 2, 0.30));   // its own samples spread
  EXPECT_FALSE(too_busy_to_judge(0.3, 2, 0.05));  // a quiet node
  EXPECT_FALSE(too_busy_to_judge(1.5, 16, 0.05));
}

TEST(SysInfo, ProcStatAndTheLoadOfOthers) {
  const std::string stat =
      "cpu  1000 20 300 5000 80 10 5 15 0 0\n"
      "cpu0 500 10 150 2500 40 5 2 7 0 0\n"
      "intr 1234\n";
  const auto t = parse_proc_stat(stat, 100);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->busy_s, (1000 + 20 + 300 + 10 + 5 + 15) / 100.0);
  EXPECT_DOUBLE_EQ(t->all_s, (1350 + 5000 + 80) / 100.0);
  EXPECT_FALSE(parse_proc_stat("intr 1\n", 100));
  EXPECT_FALSE(parse_proc_stat("cpu  1 2\n", 100));
  // 2 s of wall time on 2 cores: 3.4 s busy, 1.0 s of it this process.
  const CpuLoad l = cpu_load({10, 20}, {13.4, 24}, 5, 6, 2);
  EXPECT_TRUE(l.known);
  EXPECT_NEAR(l.other_cores, 1.2, 1e-9);
  EXPECT_NEAR(l.self_cores, 0.5, 1e-9);
  EXPECT_FALSE(cpu_load({10, 20}, {10, 20}, 0, 0, 2).known);
  EXPECT_EQ(cpu_load({10, 20}, {10.5, 24}, 0, 2, 2).other_cores, 0);  // never negative
}

// ---- NVLink classification from recorded NVML answers ----

TEST(DoctorNvlink, FarEndsByRemoteTypeOrByEveryGpu) {
  const std::vector<std::string> every = {"0000:17:00", "0000:2a:00", "0000:3d:00", "0000:4e:00"};
  // nvmlDeviceGetNvLinkRemoteDeviceType answers: 0 GPU, 2 switch, 1 (IBM NPU) and 255 unknown.
  EXPECT_EQ(nvlink_end_kind(0, "0000:2a:00", every), NvlinkEnd::Kind::gpu);
  EXPECT_EQ(nvlink_end_kind(2, "0000:c1:00", every), NvlinkEnd::Kind::nvswitch);
  EXPECT_EQ(nvlink_end_kind(255, "", every), NvlinkEnd::Kind::unknown);
  EXPECT_EQ(nvlink_end_kind(1, "0000:c1:00", every), NvlinkEnd::Kind::unknown);
  // An older driver without the call: a GPU hidden from CUDA is still a GPU.
  EXPECT_EQ(nvlink_end_kind(std::nullopt, "0000:2a:00", every), NvlinkEnd::Kind::gpu);
  EXPECT_EQ(nvlink_end_kind(std::nullopt, "0000:c1:00", every), NvlinkEnd::Kind::nvswitch);
  EXPECT_EQ(nvlink_end_kind(std::nullopt, "", every), NvlinkEnd::Kind::unknown);
  EXPECT_EQ(pci_key("00000000:2A:00.0"), "0000:2a:00");
  EXPECT_EQ(pci_key("0000:17:00.0"), "0000:17:00");
  EXPECT_EQ(pci_key("garbage"), "");
}

TEST(DoctorNvlink, PairsOverBridgesSwitchesAndHiddenGpus) {
  using K = NvlinkEnd::Kind;
  const auto links = [](int n, K kind, const std::string& pci) {
    return std::vector<NvlinkEnd>(static_cast<std::size_t>(n), NvlinkEnd{kind, pci});
  };
  // H100 NVL bridge pairs 0-1 and 2-3, CUDA_VISIBLE_DEVICES=0,2: each visible GPU's
  // 12 links reach a hidden GPU. The pair 0-2 is PCIe, not "NV12 via NVSwitch".
  const auto g0 = links(12, K::gpu, "0000:2a:00"), g2 = links(12, K::gpu, "0000:4e:00");
  EXPECT_EQ(nvlink_pair(g0, g2, "0000:3d:00", false), "");
  // The bridge pair itself, both visible: 12 direct links.
  EXPECT_EQ(nvlink_pair(g0, links(12, K::gpu, "0000:17:00"), "0000:2a:00", true),
            "NV12 (NVLink x12)");
  // HGX H200: 18 links each to NVSwitch ports.
  const auto s0 = links(18, K::nvswitch, "0000:c1:00"), s1 = links(18, K::nvswitch, "0000:c2:00");
  EXPECT_EQ(nvlink_pair(s0, s1, "0000:2a:00", true), "NV18 (NVLink x18 via NVSwitch)");
  // Links whose far end NVML cannot name, but P2P says NVLink: count unknown.
  EXPECT_EQ(nvlink_pair(links(4, K::unknown, ""), links(4, K::unknown, ""), "0000:2a:00", true),
            "NVLink (NVML P2P status; link count unknown)");
  EXPECT_EQ(nvlink_pair({}, {}, "0000:2a:00", false), "");
}

TEST(DoctorLinks, NvlinkWithoutCountHasNoPcieFigureAndPcieUsesTheMaximumSpeed) {
  EXPECT_TRUE(is_nvlink("NV18 (NVLink x18 via NVSwitch)"));
  EXPECT_TRUE(is_nvlink("NVLink (NVML P2P status; link count unknown)"));
  EXPECT_FALSE(is_nvlink("NODE (PCIe through the CPU)"));
  EXPECT_FALSE(is_nvlink(""));
  // The cases of one link, no port reported: tests/unit/test_pcie_link.cpp has the slot's.
  const auto link = [](std::string cur, std::string max, int w, int max_w) {
    LinkFacts f;
    f.pcie_current_speed = std::move(cur);
    f.pcie_max_speed = std::move(max);
    f.pcie_width = w;
    f.pcie_max_width = max_w;
    return f;
  };
  // An idle H200 whose Gen5 link trained down to Gen1 (2.5 GT/s) to save power:
  // the expectation stays Gen5 x16.
  EXPECT_NEAR(*pcie_expected_raw(link("2.5 GT/s PCIe", "32.0 GT/s PCIe", 16, 16)), 63.015, 0.01);
  // A card in an x8 slot: its current width counts.
  EXPECT_NEAR(*pcie_expected_raw(link("32.0 GT/s PCIe", "32.0 GT/s PCIe", 8, 16)), 31.508, 0.01);
  EXPECT_NEAR(*pcie_expected_raw(link("16.0 GT/s PCIe", "Unknown", 16, 16)), 31.508, 0.01);
  EXPECT_FALSE(pcie_expected_raw(link("Unknown", "", 16, 16)));
  EXPECT_FALSE(pcie_expected_raw(link("32.0 GT/s PCIe", "32.0 GT/s PCIe", 0, 0)));
}

}  // namespace xb

namespace xb {
namespace {

std::vector<double> loops_around(double gbps, std::mt19937& rng, double spread = 0.05) {
  std::uniform_real_distribution<double> u(1 - spread, 1 + spread);
  std::vector<double> v;
  v.reserve(10);
  for (int i = 0; i < 10; ++i) v.push_back(gbps * u(rng));
  return v;
}

}  // namespace

// doctor --engine-server: a lane shaped to a fraction of its peers is named
// FAIL; lanes that are all below their line rate alike are WARN (the host
// limits them); healthy lanes PASS.
TEST(DoctorEngineLanes, TheSlowNicIsNamed) {
  std::mt19937 rng(7);
  const double line = 10e9 / 8 / 1e9;  // a 10 Gb/s veth: 1.25 GB/s
  std::vector<EngineLaneFigures> lanes{
      {"lane 0 to a:1 (nic xb0)", "xb0", line, loops_around(1.1, rng)},
      {"lane 1 to a:1 (nic xb1)", "xb1", line, loops_around(0.05, rng)}};
  auto rows = judge_engine_lanes(lanes);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].verdict, Verdict::pass) << rows[0].why;
  EXPECT_EQ(rows[1].verdict, Verdict::fail) << rows[1].why;
  EXPECT_NE(rows[1].why.find("nic xb1"), std::string::npos) << rows[1].why;
  EXPECT_NEAR(rows[1].expected, line * kNicEfficiency, 1e-12);

  // every lane at 40 % of its line rate, alike: not a NIC's fault
  lanes = {{"lane 0", "xb0", line, loops_around(0.4, rng)},
           {"lane 1", "xb1", line, loops_around(0.4, rng)}};
  rows = judge_engine_lanes(lanes);
  for (const auto& r : rows) {
    EXPECT_EQ(r.verdict, Verdict::warn) << r.why;
    EXPECT_NE(r.why.find("host"), std::string::npos) << r.why;
  }
  // one lane, far below its line rate, settled: FAIL; no line rate known: no verdict
  rows = judge_engine_lanes({{"lane", "xb0", line, loops_around(0.2, rng)}});
  EXPECT_EQ(rows[0].verdict, Verdict::fail) << rows[0].why;
  rows = judge_engine_lanes({{"lane", "", 0, loops_around(0.2, rng)}});
  EXPECT_EQ(rows[0].verdict, Verdict::none) << rows[0].why;
  EXPECT_TRUE(judge_engine_lanes({}).empty());
}

// Noise alone never convicts a lane: equal lanes with 40 % loop-to-loop
// spread are never FAIL against each other.
TEST(DoctorEngineLanes, NoisyEqualLanesAreNotConvicted) {
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const auto rows = judge_engine_lanes({{"lane 0", "", 0, loops_around(1.0, rng, 0.4)},
                                          {"lane 1", "", 0, loops_around(1.0, rng, 0.4)},
                                          {"lane 2", "", 0, loops_around(1.0, rng, 0.4)}});
    for (const auto& r : rows) ASSERT_NE(r.verdict, Verdict::fail) << seed << " " << r.why;
  }
}

TEST(DoctorEngineLanes, NicLineRateFromSysfs) {
  const std::string root = ::testing::TempDir() + "/xb_sysfs_class";
  std::filesystem::create_directories(root + "/net/eth1");
  std::filesystem::create_directories(root + "/infiniband/mlx5_0/ports/1");
  std::filesystem::create_directories(root + "/net/veth9");
  std::ofstream(root + "/net/eth1/speed") << "25000\n";
  std::ofstream(root + "/infiniband/mlx5_0/ports/1/rate") << "100 Gb/sec (4X EDR)\n";
  std::ofstream(root + "/net/veth9/speed") << "-1\n";
  EXPECT_DOUBLE_EQ(nic_line_gbps("eth1", root), 3.125);
  EXPECT_DOUBLE_EQ(nic_line_gbps("mlx5_0:1", root), 12.5);
  EXPECT_DOUBLE_EQ(nic_line_gbps("mlx5_0", root), 12.5);
  EXPECT_EQ(nic_line_gbps("veth9", root), 0);  // an unknown speed
  EXPECT_EQ(nic_line_gbps("nope", root), 0);
  EXPECT_EQ(nic_line_gbps("../x", root), 0);
}

// The registry is the one list of checks: --checks, its help and the
// order of the rows come from it.
TEST(DoctorRegistry, EveryCheckOnceInItsOrder) {
  const std::vector<std::string> order = {"bandwidth", "link",    "direction", "duplex",
                                          "numa",      "devices", "data",      "pairs",
                                          "latency",   "engine",  "noise",     "clocks"};
  EXPECT_EQ(doctor::check_names(), order);
  const auto checks = doctor::make_checks();
  ASSERT_EQ(checks.size(), order.size());
  const std::string help = doctor::checks_help();
  for (std::size_t i = 0; i < checks.size(); ++i) {
    EXPECT_EQ(checks[i]->name(), order[i]);
    EXPECT_FALSE(checks[i]->what().empty()) << order[i];
    EXPECT_NE(help.find("  " + order[i] + " "), std::string::npos) << help;
  }
  std::size_t at = 0;  // --help's lines fit a terminal
  for (std::size_t nl; (nl = help.find('\n', at)) != std::string::npos; at = nl + 1)
    EXPECT_LE(nl - at, 80U) << help.substr(at, nl - at);
  for (const auto& line : {std::string("  bandwidth  each copy path"),
                           std::string("  link       each device's PCIe link")})
    EXPECT_NE(help.find(line), std::string::npos) << help;
}

// What each check asks of the probes: the run builds only the union of the
// checks asked (the link, latency, engine and clocks checks measure alone).
TEST(DoctorRegistry, TheProbesEachCheckReads) {
  std::map<std::string, std::string> needs;
  for (const auto& c : doctor::make_checks()) {
    const doctor::ProbeNeeds n = c->needs();
    needs[c->name()] = fmt::format("{}{}{}{}", n.copies ? "c" : "-", n.p2p ? "p" : "-",
                                   n.duplex ? "d" : "-", n.near ? "n" : "-");
  }
  const std::map<std::string, std::string> expected = {
      {"bandwidth", "cp--"}, {"link", "----"},    {"direction", "c---"}, {"duplex", "c-d-"},
      {"numa", "c--n"},      {"devices", "c---"}, {"data", "----"},      {"pairs", "-p--"},
      {"latency", "----"},   {"engine", "----"},  {"noise", "cp--"},     {"clocks", "----"}};
  EXPECT_EQ(needs, expected);
}

namespace {
struct EnvDevices {
  explicit EnvDevices(const char* n) { setenv("XFERBENCH_HOST_DEVICES", n, 1); }
  ~EnvDevices() { unsetenv("XFERBENCH_HOST_DEVICES"); }
};
}  // namespace

// A small run on two host devices: only the checks asked run, and the rows
// come check by check in the registry's order whatever order they were
// asked in; a check's own rows come before its comparisons.
TEST(DoctorRun, RowsComeCheckByCheckInTheRegistrysOrder) {
  EnvDevices env("2");
  auto be = make_backend("host");
  doctor::Plan plan;
  plan.size = 1ULL << 20;
  plan.iters = 3;
  plan.warmup = 1;
  plan.budget_factor = 1;
  plan.budget_floor_s = 0.2;
  const doctor::Outcome out = doctor::run(*be, plan, {"pairs", "devices", "link"}, {});
  std::vector<std::string> checks;
  for (const Finding& f : out.findings)
    if (checks.empty() || checks.back() != f.check) checks.push_back(f.check);
  EXPECT_EQ(checks, (std::vector<std::string>{"link", "devices", "pairs"}));
  EXPECT_GT(out.reference, 0);
  EXPECT_GE(out.rounds, plan.iters);
  std::size_t link_rows = 0, device_rows = 0;
  for (const Finding& f : out.findings) {
    link_rows += f.check == "link";
    device_rows += f.check == "devices";
    if (f.check == "link") {
      EXPECT_EQ(f.why, "no PCIe link: the host backend's devices are NUMA nodes");
    }
  }
  EXPECT_EQ(link_rows, 2U);    // one per device
  EXPECT_GE(device_rows, 6U);  // h2d, d2h, d2d of each device, per method
}

// doctor --quick's d2d at 16 MiB sat in the H200's L2 (CUDA review 2, N13):
// device backends copy d2d at 256 MiB or what fits, the host keeps its size.
TEST(DoctorProbes, D2dBeyondTheGpusL2) {
  constexpr Bytes MiB = 1ULL << 20;
  EXPECT_EQ(doctor::d2d_bytes(16 * MiB, true, 80000 * MiB), 256 * MiB);
  EXPECT_EQ(doctor::d2d_bytes(16 * MiB, true, 0), 256 * MiB);           // free unknown
  EXPECT_EQ(doctor::d2d_bytes(16 * MiB, true, 1000 * MiB), 125 * MiB);  // an eighth of free
  EXPECT_EQ(doctor::d2d_bytes(16 * MiB, true, 64 * MiB), 16 * MiB);     // never below the plan
  EXPECT_EQ(doctor::d2d_bytes(512 * MiB, true, 80000 * MiB), 512 * MiB);
  EXPECT_EQ(doctor::d2d_bytes(16 * MiB, false, 80000 * MiB), 16 * MiB);  // host memory
  EXPECT_EQ(doctor::plan_of(true, false).size, 16 * MiB);  // --quick stays quick elsewhere
  EXPECT_EQ(doctor::plan_of(true, false).iters, 5);
  EXPECT_EQ(doctor::plan_of(true, false).d2d_size, 0u);  // chosen by doctor::run

  auto be = make_backend("host");
  doctor::Probes probes(*be, MiB, 3 * MiB);
  probes.build({.copies = true});
  for (Method m : probes.methods()) {
    EXPECT_EQ(probes.find_dev("d2d", 0, m)->ops.at(0).bytes, 3 * MiB);
    EXPECT_EQ(probes.find_dev("h2d", 0, m)->ops.at(0).bytes, MiB);
    EXPECT_EQ(probes.find_dev("d2h", 0, m)->ops.at(0).bytes, MiB);
  }
  probes.measure({}, {2, 1, 1, 0.05, 2}, {});
  EXPECT_TRUE(probes.wrong_data().empty());  // every destination checked at its own size
}

}  // namespace xb
