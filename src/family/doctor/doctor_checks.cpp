#include "family/doctor/doctor_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace xb {

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::pass:
      return "PASS";
    case Verdict::warn:
      return "WARN";
    case Verdict::fail:
      return "FAIL";
    case Verdict::none:
      return "-";
  }
  return "?";
}

Verdict grade(double ratio, double warn_below, double fail_below) {
  if (!(ratio > 0)) return Verdict::fail;
  return ratio >= warn_below ? Verdict::pass : ratio >= fail_below ? Verdict::warn : Verdict::fail;
}

std::optional<double> parse_link_speed(const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == 0 || !(v > 0) || text.find("GT/s", used) == std::string::npos) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

double pcie_lane_gbps(double gts) {
  const double encoding = gts <= 5.0 ? 8.0 / 10.0 : gts < 64.0 ? 128.0 / 130.0 : 242.0 / 256.0;
  return gts * encoding / 8.0;
}

std::string pcie_generation(double gts) {
  const double gens[] = {2.5, 5, 8, 16, 32, 64, 128};
  for (int i = 0; i < 7; ++i)
    if (std::abs(gts - gens[i]) < 0.01) return fmt::format("Gen{}", i + 1);
  return fmt::format("{} GT/s", gts);
}

double memory_peak_gbps(double clock_khz, int bus_bits) {
  return 2.0 * clock_khz * 1e3 * bus_bits / 8.0 / 1e9;
}

std::vector<double> peer_ratios(const std::vector<double>& values) {
  if (values.size() < 2) return {};
  std::vector<double> s = values;
  std::sort(s.begin(), s.end());
  const double ref = values.size() >= 3 ? (s.size() % 2 ? s[s.size() / 2]
                                                        : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2)
                                        : s.back();
  std::vector<double> out;
  for (double v : values) out.push_back(ref > 0 ? v / ref : 0);
  return out;
}

}  // namespace xb
