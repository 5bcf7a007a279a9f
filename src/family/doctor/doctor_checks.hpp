#pragma once
// `xferbench doctor`'s judgement, as pure functions: what a link should
// give (PCIe generation x width, device memory clock x bus width), how a
// measured figure is graded against it, and the comparisons between peers
// (directions of one device, devices, pairs of one link class). No device
// code: tested with recorded sysfs strings and attribute values.
#include <optional>
#include <string>
#include <vector>

namespace xb {

struct ClockHolds;  // backend/backend.hpp

enum class Verdict { pass, warn, fail, none };  // none: measured, nothing to hold it against
const char* to_string(Verdict v);

// One row of the verdict table.
struct Finding {
  std::string check;  // "bandwidth", "link", "direction", "devices", "pairs", "noise", ...
  std::string where;  // "h2d device 1 dma"
  Verdict verdict = Verdict::none;
  double measured = 0, expected = 0;  // expected 0: none (why says so)
  std::string unit;                   // "GB/s", "us", "GT/s x lanes"
  std::string why;
  double ratio() const { return expected > 0 ? measured / expected : 0; }
};

// Efficiency factors: what such links deliver in practice (README, "doctor").
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
// (NVLink 5) 50; 0 for an architecture without NVLink or not known here.
double nvlink_link_gbps(int arch_major, int arch_minor);
// The NVLink count a link description starts with ("NV18 (NVLink x18 via
// NVSwitch)" -> 18); nullopt for PCIe paths and "NVLink" without a count.
std::optional<int> nvlink_count(const std::string& link_type);

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

// Peers: `values` of one kind (one per device, or per pair of one link
// class): each one's ratio to the reference of the group: the median with
// 3 or more members, the best with 2. Empty for fewer than 2.
std::vector<double> peer_ratios(const std::vector<double>& values);

}  // namespace xb
