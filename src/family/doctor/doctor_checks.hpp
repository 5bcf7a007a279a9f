#pragma once
// `xferbench doctor`'s judgement, as pure functions: what a link should
// give (PCIe generation x width, device memory clock x bus width), how a
// measured figure is graded against it, and the comparisons between peers
// (directions of one device, devices, pairs of one link class). No device
// code: tested with recorded sysfs strings and attribute values.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xb {

struct ClockHolds;  // backend/backend.hpp
struct LinkFacts;   // backend/backend.hpp

enum class Verdict { pass, warn, fail, none };  // none: measured, nothing to hold it against
const char* to_string(Verdict v);

// One row of the verdict table.
struct Finding {
  Finding() = default;
  Finding(std::string check_, std::string where_, Verdict v, double measured_, double expected_,
          std::string unit_, std::string why_)
      : check(std::move(check_)),
        where(std::move(where_)),
        verdict(v),
        measured(measured_),
        expected(expected_),
        unit(std::move(unit_)),
        why(std::move(why_)) {}
  std::string check;  // a check's name (doctor_registry.cpp), "remote", "allreduce", ...
  std::string where;  // "h2d device 1 dma"
  Verdict verdict = Verdict::none;
  double measured = 0, expected = 0;  // expected 0: none (why says so)
  std::string unit;                   // "GB/s", "GB/s raw", "us", "% CV", "s held"
  std::string why;
  std::optional<double> paired_ratio;  // judged on rounds: the median of measured_i / expected_i
  double ratio() const {
    return paired_ratio ? *paired_ratio : expected > 0 ? measured / expected : 0;
  }
};

// Efficiency factors: what such links deliver in practice (docs/commands/doctor.md).
// PCIe DMA: 256-byte payloads carry ~26 bytes of TLP/DLLP framing (~0.90),
// less flow control and DMA setup; nvbandwidth's large copies reach 80-87 %
// of the raw rate on Gen4/Gen5 x16.
inline constexpr double kPcieEfficiency = 0.80;
// Device memory: a copy reads and writes, so d2d moves half the peak; large
// SM and copy-engine copies reach 80-90 % of that half.
inline constexpr double kMemoryCopyEfficiency = 0.80;

// Grades measured / expected: >= warn_below pass, >= fail_below warn, else fail.
Verdict grade(double ratio, double warn_below = 0.8, double fail_below = 0.5);

// "32.0 GT/s PCIe" -> 32.0 (also "8 GT/s"); nullopt for "Unknown" or garbage.
std::optional<double> parse_link_speed(const std::string& sysfs_text);
// Raw GB/s of one lane, one direction, after line encoding: 8b/10b up to
// 5 GT/s (Gen1/2), 128b/130b for Gen3-5, FLIT (242/256) from 64 GT/s.
double pcie_lane_gbps(double gts);
// "Gen5" for 32 GT/s, "Gen4" for 16, ... ("? GT/s" otherwise).
std::string pcie_generation(double gts);
// Peak GB/s of device memory: double data rate x clock x bus width.
double memory_peak_gbps(double clock_khz, int bus_bits);

// NVLink: what a copy engine moves over it in practice, of the links'
// per-direction rate (nvbandwidth's device-to-device copies over NVSwitch
// on 8-GPU H100/A100 systems: about 80-85 %).
inline constexpr double kNvlinkEfficiency = 0.80;

// GB/s per NVLink per direction, from the GPU architecture (compute
// capability; NVIDIA's datasheets): Pascal 6.0 (NVLink 1) 20, Volta 7.0 and
// Ampere 8.0 (NVLink 2, 3) 25, Ampere 8.6 (NVLink 3 bridge: 4 links, 112.5
// GB/s both directions together) 14.0625, Hopper 9.0 (NVLink 4) 25, Blackwell 10.x
// (NVLink 5) 50; 0 for an architecture without NVLink or not known here,
// except Xavier 7.2, which gets Volta's 25 (never read: it has no NVLink).
double nvlink_link_gbps(int arch_major, int arch_minor);
// The NVLink count a link description starts with ("NV18 (NVLink x18 via
// NVSwitch)" -> 18); nullopt for PCIe paths and "NVLink" without a count.
std::optional<int> nvlink_count(const std::string& link_type);
// Whether a link description is NVLink at all, with or without a count
// ("NVLink (NVML P2P status; link count unknown)" is: it has no PCIe figure).
bool is_nvlink(const std::string& link_type);

// What a device's PCIe link can do: the lesser of the device's own maximum
// and its upstream port's (a Gen5 card in a Gen4 slot trains to Gen4 at
// most), never below what it trained at (a VM's virtual port may report
// less than the link runs at); the device's own maximum where its port is
// not reported, its current speed where neither is. slot_limited: the port
// holds it below the card's maximum, in speed or width. nullopt where sysfs
// says neither speed nor width.
struct PcieCapability {
  double gts = 0;  // per lane
  int lanes = 0;
  bool slot_limited = false;
  double card_gts = 0;  // the device's own maxima
  int card_lanes = 0;
};
std::optional<PcieCapability> pcie_capability(const LinkFacts& f);

// The raw GB/s per direction a PCIe link should give: what it can do
// (pcie_capability: an idle GPU's link may train down to save power; the
// `link` row reports a link below its capability) at its current width
// (fallback: the capability's); nullopt where sysfs does not say.
struct PcieLink {
  double gts = 0;  // per lane
  int lanes = 0;
};
std::optional<PcieLink> pcie_expected_link(const LinkFacts& f);
std::optional<double> pcie_expected_raw(const LinkFacts& f);

// The `link` row of a reported link: raw GB/s as trained (measured) against
// what it can do (pcie_capability: expected); below it WARN, "reseat the
// card ..."; a link its slot holds below the card's maximum is no fault of
// the card: PASS (or the WARN of a link below even that), and the why says
// the slot limits it. nullopt where sysfs does not report the link.
struct LinkJudgement {
  Verdict verdict = Verdict::none;
  double measured = 0, expected = 0;
  std::string why;
};
std::optional<LinkJudgement> judge_pcie_link(const LinkFacts& f);

// Seconds a device's clocks were held down during a run, from its
// clock-hold counters (Backend::clock_holds) before and after: the largest
// of the causes (they overlap), with its name ("power limit", "thermal
// limit", "board limit", "reliability"). Negative deltas (the driver
// reloaded) give nullopt.
struct ClockHeld {
  double seconds = 0;
  std::string cause;
};
std::optional<ClockHeld> clock_held(const ClockHolds& before, const ClockHolds& after);
// held / run: < 2 % pass, < 20 % warn, else fail.
Verdict grade_clock_hold(double held_s, double run_s);

// --- Judging on a busy node ----------------------------------------------
// A comparison is measured in paired rounds (A B, B A, A B ...: a burst of
// load hits both sides alike) and judged on the ratio of each round,
// measured_i / expected_i. Its verdict must not depend on noise: the
// median ratio has a confidence interval, and only when the whole interval
// earns one grade is the verdict settled. An unsettled comparison is
// measured again (fresh rounds, within a time budget); one that stays
// unsettled is at most WARN ("could not judge"), and a FAIL must also
// reproduce on a fresh measurement.

// A measurement whose samples spread more than this (CV) is noisy.
inline constexpr double kNoiseLimit = 0.10;

// The thresholds of a grade: ratio >= warn_below passes, >= fail_below warns.
struct Grade {
  double warn_below = 0.8, fail_below = 0.5;
};

// The median of `values` and a distribution-free interval around it (order
// statistics of the binomial): [lo, hi] holds the true median with at least
// `confidence`; with too few values for that, [min, max].
struct Interval {
  double lo = 0, median = 0, hi = 0;
};
Interval median_interval(std::vector<double> values, double confidence = 0.90);

struct Judgement {
  Verdict verdict = Verdict::none;
  Interval ratio;        // of measured_i / expected_i over the rounds
  bool settled = false;  // lo, median and hi all earn one grade
  int rounds = 0;
  std::vector<double> ratios;  // the rounds' ratios it was judged on
};
// Per-round ratios -> verdict: the grade of the median when settled; when
// not, the same but never FAIL (at most WARN). No rounds: none.
Judgement judge(const std::vector<double>& ratios, Grade g);

// A FAIL must reproduce: `first` failed (settled); `again` is a fresh
// measurement of the same comparison. FAIL only when the median of `again`
// fails too and the rounds of both together are a settled FAIL; otherwise
// WARN.
Verdict confirm_fail(const Judgement& first, const Judgement& again, Grade g);

// A check measured once, not in rounds (the engine's selftest, a ranked
// run): it cannot be judged where other processes kept more than a quarter
// of the cores busy around it or its samples spread beyond kNoiseLimit; a
// FAIL there is at most WARN.
bool too_busy_to_judge(double other_cores, int cores, double cv);

// Peers: `values` of one kind (one per device, or per pair of one link
// class): each one's ratio to the reference of the group: the median with
// 3 or more members, the best with 2. Empty for fewer than 2.
std::vector<double> peer_ratios(const std::vector<double>& values);
// The reference peer_ratios holds each value against: the median with 3 or
// more values, the best with 2; 0 with fewer.
double peer_reference(const std::vector<double>& values);

// --- The engine's lanes (doctor --engine-server) --------------------------
// A NIC moves this share of its line rate through the engine in practice
// (TCP or RDMA headers, request turnaround).
inline constexpr double kNicEfficiency = 0.80;

// One lane of an engine run: where it went, its NIC and that NIC's line
// rate in GB/s (0: not known), and its GB/s in each loop (the lanes ran
// every loop together, so loop l of every lane is one paired round).
struct EngineLaneFigures {
  std::string where;  // "lane 1 to 10.0.0.2:20000 (nic eth1)"
  std::string nic;
  double line_gbps = 0;
  std::vector<double> gbps;
};
// A row per lane, judged on its loops: against its peers (each loop's
// reference: peer_reference of the lanes' figures), FAIL when settled below
// half of them; against its NIC's line rate x kNicEfficiency, where known.
// A lane below its line rate while its peers are too is at most WARN (the
// host or the transport limits every lane, not this NIC); with one lane
// the line-rate judgement stands alone.
std::vector<Finding> judge_engine_lanes(const std::vector<EngineLaneFigures>& lanes);
// A NIC's line rate in GB/s from sysfs under `root` (/sys/class): a network
// interface's net/NAME/speed (Mb/s), or an RDMA port's
// infiniband/DEV/ports/PORT/rate ("100 Gb/sec (4X EDR)"; NAME "mlx5_0:1",
// port 1 by default); 0 where neither says.
double nic_line_gbps(const std::string& nic, const std::string& root = "/sys/class");

}  // namespace xb
