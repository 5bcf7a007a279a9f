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

// Peers: `values` of one kind (one per device, or per pair of one link
// class): each one's ratio to the reference of the group: the median with
// 3 or more members, the best with 2. Empty for fewer than 2.
std::vector<double> peer_ratios(const std::vector<double>& values);

}  // namespace xb
