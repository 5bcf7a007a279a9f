#include "family/doctor/doctor_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "backend/backend.hpp"

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

double nvlink_link_gbps(int major, int minor) {
  switch (major) {
    case 6:
      return minor == 0 ? 20 : 0;
    case 7:
      // V100 (7.0). 7.2 (Xavier, an SoC) gets 25 too though it has no NVLink:
      // harmless, as the rate is asked only for a pair NVML counts NVLinks on.
      // 7.5 (Turing): bridges not modelled.
      return minor == 0 || minor == 2 ? 25 : 0;
    case 8:
      return minor == 0 ? 25 : minor == 6 ? 14.0625 : 0;  // A100; GA102 bridges; 8.7/8.9 none
    case 9:
      return minor == 0 ? 25 : 0;
    case 10:
      return 50;
    default:
      return 0;
  }
}

std::optional<int> nvlink_count(const std::string& link_type) {
  if (link_type.rfind("NV", 0) != 0 || link_type.size() < 3 ||
      !std::isdigit(static_cast<unsigned char>(link_type[2])))
    return std::nullopt;
  const int n = std::atoi(link_type.c_str() + 2);
  return n > 0 ? std::optional<int>(n) : std::nullopt;
}

bool too_busy_to_judge(double other_cores, int cores, double cv) {
  return other_cores > 0.25 * std::max(cores, 1) || cv > kNoiseLimit;
}

bool is_nvlink(const std::string& link_type) {
  return nvlink_count(link_type).has_value() || link_type.rfind("NVLink", 0) == 0;
}

std::optional<PcieCapability> pcie_capability(const LinkFacts& f) {
  const auto cur = parse_link_speed(f.pcie_current_speed);
  const auto card = parse_link_speed(f.pcie_max_speed);
  const auto port = parse_link_speed(f.pcie_port_max_speed);
  PcieCapability c;
  c.card_gts = card ? *card : cur ? *cur : 0;
  c.card_lanes = f.pcie_max_width > 0 ? f.pcie_max_width : f.pcie_width;
  if (!(c.card_gts > 0) || c.card_lanes <= 0) return std::nullopt;
  c.gts = port ? std::min(c.card_gts, *port) : c.card_gts;
  c.lanes =
      f.pcie_port_max_width > 0 ? std::min(c.card_lanes, f.pcie_port_max_width) : c.card_lanes;
  if (cur) c.gts = std::max(c.gts, *cur);
  c.lanes = std::max(c.lanes, f.pcie_width);
  c.slot_limited = c.gts < c.card_gts || c.lanes < c.card_lanes;
  return c;
}

std::optional<PcieLink> pcie_expected_link(const LinkFacts& f) {
  const auto c = pcie_capability(f);
  if (!c) return std::nullopt;
  return PcieLink{c->gts, f.pcie_width > 0 ? f.pcie_width : c->lanes};
}

std::optional<double> pcie_expected_raw(const LinkFacts& f) {
  const auto l = pcie_expected_link(f);
  if (!l) return std::nullopt;
  return pcie_lane_gbps(l->gts) * l->lanes;
}

std::optional<LinkJudgement> judge_pcie_link(const LinkFacts& f) {
  const auto cur = parse_link_speed(f.pcie_current_speed);
  const auto cap = pcie_capability(f);
  if (!cur || !cap || f.pcie_width <= 0) return std::nullopt;
  LinkJudgement j;
  j.measured = pcie_lane_gbps(*cur) * f.pcie_width;
  j.expected = pcie_lane_gbps(cap->gts) * cap->lanes;
  const bool below = *cur < cap->gts || f.pcie_width < cap->lanes;
  j.verdict = below ? Verdict::warn : Verdict::pass;
  const std::string can = fmt::format("{} x{}", pcie_generation(cap->gts), cap->lanes);
  const std::string limit =
      cap->slot_limited
          ? fmt::format("the slot's limit (its port's maximum; the card can do {} x{})",
                        pcie_generation(cap->card_gts), cap->card_lanes)
          : std::string("its maximum");
  if (!below)
    j.why = cap->slot_limited ? fmt::format("{} as {}: a faster slot would give more", can, limit)
                              : fmt::format("{} as {}", can, limit);
  else
    j.why = fmt::format(
        "trained at {} x{}, below {}, {}: reseat the card, check the slot and BIOS link "
        "settings (or it idles in a power-saving state: re-check under load)",
        pcie_generation(*cur), f.pcie_width, can, limit);
  return j;
}

std::optional<ClockHeld> clock_held(const ClockHolds& b, const ClockHolds& a) {
  const std::pair<double, const char*> d[] = {{a.power_s - b.power_s, "power limit"},
                                              {a.thermal_s - b.thermal_s, "thermal limit"},
                                              {a.board_s - b.board_s, "board limit"},
                                              {a.reliability_s - b.reliability_s, "reliability"}};
  ClockHeld worst;
  for (const auto& [delta, cause] : d) {
    if (delta < 0) return std::nullopt;
    if (delta > worst.seconds || worst.cause.empty()) worst = {delta, cause};
  }
  return worst;
}

Verdict grade_clock_hold(double held_s, double run_s) {
  if (!(run_s > 0)) return Verdict::none;
  const double f = held_s / run_s;
  return f < 0.02 ? Verdict::pass : f < 0.20 ? Verdict::warn : Verdict::fail;
}

double peer_reference(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  std::vector<double> s = values;
  std::sort(s.begin(), s.end());
  if (values.size() == 2) return s.back();
  return s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
}

std::vector<double> peer_ratios(const std::vector<double>& values) {
  if (values.size() < 2) return {};
  const double ref = peer_reference(values);
  std::vector<double> out;
  out.reserve(values.size());
  for (double v : values) out.push_back(ref > 0 ? v / ref : 0);
  return out;
}

Interval median_interval(std::vector<double> v, double confidence) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  Interval out;
  out.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  // The largest k with P(B <= k-1) <= (1 - confidence) / 2, B ~ Binomial(n, 1/2):
  // [x_(k), x_(n-k+1)] then covers the median with at least `confidence`.
  const double tail = (1 - confidence) / 2;
  std::size_t k = 1;
  double pmf = std::pow(0.5, static_cast<double>(n)), cdf = pmf;  // P(B <= k-1)
  while (2 * (k + 1) <= n + 1) {
    pmf *= static_cast<double>(n - k + 1) / static_cast<double>(k);  // P(B = k)
    if (cdf + pmf > tail) break;
    cdf += pmf;
    ++k;
  }
  out.lo = v[k - 1];
  out.hi = v[n - k];
  return out;
}

Judgement judge(const std::vector<double>& ratios, Grade g) {
  Judgement j;
  j.rounds = static_cast<int>(ratios.size());
  j.ratios = ratios;
  if (ratios.empty()) return j;
  j.ratio = median_interval(ratios);
  const Verdict mid = grade(j.ratio.median, g.warn_below, g.fail_below);
  j.settled = grade(j.ratio.lo, g.warn_below, g.fail_below) == mid &&
              grade(j.ratio.hi, g.warn_below, g.fail_below) == mid;
  j.verdict = !j.settled && mid == Verdict::fail ? Verdict::warn : mid;
  return j;
}

Verdict confirm_fail(const Judgement& first, const Judgement& again, Grade g) {
  if (first.verdict != Verdict::fail || !first.settled) return Verdict::warn;
  if (grade(again.ratio.median, g.warn_below, g.fail_below) != Verdict::fail) return Verdict::warn;
  std::vector<double> both = first.ratios;
  both.insert(both.end(), again.ratios.begin(), again.ratios.end());
  const Judgement pooled = judge(both, g);
  return pooled.verdict == Verdict::fail && pooled.settled ? Verdict::fail : Verdict::warn;
}

std::vector<Finding> judge_engine_lanes(const std::vector<EngineLaneFigures>& lanes) {
  std::vector<Finding> out;
  std::size_t loops = SIZE_MAX;
  for (const auto& l : lanes) loops = std::min(loops, l.gbps.size());
  if (lanes.empty() || loops == 0 || loops == SIZE_MAX) return out;
  const Grade g{0.8, 0.5};
  std::vector<Judgement> peers(lanes.size()), line(lanes.size());
  for (std::size_t l = 0; l < loops; ++l) {
    std::vector<double> round;
    round.reserve(lanes.size());
    for (const auto& lane : lanes) round.push_back(lane.gbps[l]);
    const double ref = peer_reference(round);
    for (std::size_t i = 0; i < lanes.size() && ref > 0; ++i)
      peers[i].ratios.push_back(round[i] / ref);
  }
  bool every_lane_short = true;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    peers[i] = judge(peers[i].ratios, g);
    std::vector<double> r;
    if (lanes[i].line_gbps > 0)
      for (std::size_t l = 0; l < loops; ++l)
        r.push_back(lanes[i].gbps[l] / (lanes[i].line_gbps * kNicEfficiency));
    line[i] = judge(r, g);
    every_lane_short =
        every_lane_short && line[i].verdict != Verdict::pass && line[i].verdict != Verdict::none;
  }
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const auto& lane = lanes[i];
    std::vector<double> mine(lane.gbps.begin(), lane.gbps.begin() + static_cast<long>(loops));
    const double measured = median_interval(mine).median;
    const double expected = lane.line_gbps * kNicEfficiency;
    Finding f{"engine", lane.where, Verdict::none, measured, expected, "GB/s", ""};
    const Judgement& p = peers[i];
    const Judgement& n = line[i];
    const std::string line_text =
        lane.line_gbps > 0
            ? fmt::format("{:.0f} % of nic {}'s line rate ({:.0f} Gb/s) x {:.2f}",
                          n.ratio.median * 100, lane.nic, lane.line_gbps * 8, kNicEfficiency)
            : fmt::format("nic {}: no line rate in sysfs", lane.nic);
    if (p.verdict == Verdict::fail) {
      f.verdict = Verdict::fail;
      f.paired_ratio = p.ratio.median;
      f.why = fmt::format(
          "this lane is slow: {:.0f} % of its peers in each loop ({}); {}", p.ratio.median * 100,
          lane.nic.empty() ? std::string("UCX's own NIC choice") : "nic " + lane.nic, line_text);
    } else if (n.verdict != Verdict::none) {
      f.paired_ratio = n.ratio.median;
      f.verdict = n.verdict;
      if (n.verdict == Verdict::fail && lanes.size() > 1 && every_lane_short)
        f.verdict = Verdict::warn;
      f.why = n.verdict == Verdict::pass ? line_text
              : f.verdict == Verdict::warn && lanes.size() > 1 && every_lane_short
                  ? line_text +
                        ": every lane is below its line rate alike, so the host (cores, "
                        "UCX transport) limits them, not this NIC"
                  : line_text + (n.settled ? "" : " (not settled: noisy loops)");
      if (p.verdict == Verdict::warn)
        f.why += fmt::format("; {:.0f} % of its peers", p.ratio.median * 100);
    } else {
      f.verdict = p.verdict == Verdict::none ? Verdict::none : p.verdict;
      if (p.verdict != Verdict::none) f.paired_ratio = p.ratio.median;
      f.why = p.verdict == Verdict::none
                  ? line_text + "; one lane: nothing to hold it against"
                  : fmt::format("{:.0f} % of its peers; {}", p.ratio.median * 100, line_text);
    }
    out.push_back(std::move(f));
  }
  return out;
}

double nic_line_gbps(const std::string& nic, const std::string& root) {
  const auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return s;
  };
  const std::string dev = nic.substr(0, nic.find(':'));
  if (dev.empty() || dev.find('/') != std::string::npos) return 0;
  const std::string port = nic.find(':') == std::string::npos ? "1" : nic.substr(nic.find(':') + 1);
  if (const std::string mbps = read(root + "/net/" + dev + "/speed"); !mbps.empty()) {
    const double v = std::strtod(mbps.c_str(), nullptr);
    if (v > 0) return v * 1e6 / 8 / 1e9;
  }
  if (const std::string rate = read(root + "/infiniband/" + dev + "/ports/" + port + "/rate");
      !rate.empty()) {
    const double gbit = std::strtod(rate.c_str(), nullptr);
    if (gbit > 0) return gbit / 8;
  }
  return 0;
}

}  // namespace xb
