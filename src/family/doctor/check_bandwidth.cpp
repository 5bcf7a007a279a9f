// bandwidth: every copy path against what its link should give: PCIe
// generation x width for h2d and d2h, device memory clock x bus width for
// d2d, NVLinks x the per-link rate (or the slower PCIe link) for p2p, and
// on the host backend the memcpy of all cores.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

// What a device's PCIe link should give: raw GB/s per direction, if reported.
std::optional<double> pcie_raw_gbps(const LinkFacts& f) { return pcie_expected_raw(f); }

// "Gen5 x16" of the figure pcie_raw_gbps takes ("" where none), and what
// limits it where the slot does ("Gen4 x16, its slot's limit (the card: Gen5 x16)").
std::string pcie_text(const LinkFacts& f) {
  const auto l = pcie_expected_link(f);
  if (!l) return std::string();
  std::string s = fmt::format("{} x{}", pcie_generation(l->gts), l->lanes);
  if (const auto c = pcie_capability(f); c && c->slot_limited)
    s += fmt::format(", its slot's limit (the card: {} x{})", pcie_generation(c->card_gts),
                     c->card_lanes);
  return s;
}

using Expected = std::pair<double, std::string>;  // GB/s (0: none) and why

// A pair over NVLink: its links x the per-link rate of the architecture;
// over PCIe: the slower of the two devices' links.
Expected p2p_expected(Backend& be, const Path& p) {
  const std::string type = be.link_type(p.src, p.dst);
  const LinkFacts a = be.link_facts(p.src), b = be.link_facts(p.dst);
  if (const auto n = nvlink_count(type)) {
    const double per = nvlink_link_gbps(a.arch_major, a.arch_minor);
    if (per <= 0)
      return {0, fmt::format("no expected figure: {} on an architecture ({}.{}) whose NVLink "
                             "rate is not known here; compared with the other pairs instead",
                             type, a.arch_major, a.arch_minor)};
    return {*n * per * kNvlinkEfficiency,
            fmt::format("{}: {} links x {:g} GB/s per direction (compute {}.{}) x {:.2f} "
                        "efficiency",
                        type, *n, per, a.arch_major, a.arch_minor, kNvlinkEfficiency)};
  }
  if (is_nvlink(type))
    return {0, fmt::format("no expected figure: {}; compared with the other pairs instead", type)};
  const auto ra = pcie_raw_gbps(a), rb = pcie_raw_gbps(b);
  if (!ra || !rb)
    return {0, fmt::format("no expected figure for p2p over {}: its rate is not known here; "
                           "compared with the other pairs of its link class instead",
                           type.empty() ? std::string("this path") : type)};
  const double raw = std::min(*ra, *rb);
  return {raw * kPcieEfficiency,
          fmt::format("{}: the slower of the two PCIe links ({:.1f} GB/s raw per direction) x "
                      "{:.2f} efficiency",
                      type, raw, kPcieEfficiency)};
}

// What a copy should give, and why; 0 with the reason where nothing says.
Expected expected(const Context& ctx, const Path& p) {
  Backend& be = ctx.backend();
  if (be.name() == "host") {
    if (p.kase == copy_case::p2p)
      return {0, "no expected figure for host p2p: compared with the other pairs instead"};
    return {ctx.reference(),
            fmt::format("host memory reference: memcpy of {} on all {} cores, best of 5",
                        format_size(ctx.plan().size), online_cores())};
  }
  const LinkFacts f = be.link_facts(p.device());
  if (p.kase == copy_case::h2d || p.kase == copy_case::d2h) {
    const auto raw = pcie_raw_gbps(f);
    if (!raw)
      return {0, fmt::format("no expected figure: the {} backend does not report this device's "
                             "PCIe link here",
                             be.name())};
    return {*raw * kPcieEfficiency,
            fmt::format("PCIe {} ({:.1f} GB/s raw per direction) x {:.2f} efficiency", pcie_text(f),
                        *raw, kPcieEfficiency)};
  }
  if (p.kase == copy_case::d2d) {
    if (f.mem_clock_khz <= 0 || f.mem_bus_bits <= 0)
      return {0, "no expected figure: device memory clock and bus width unknown"};
    const double peak = memory_peak_gbps(f.mem_clock_khz, f.mem_bus_bits);
    return {peak / 2 * kMemoryCopyEfficiency,
            fmt::format("device memory {:.0f} GB/s peak ({:.0f} MHz x {} bits, DDR); a copy "
                        "reads and writes: half, x {:.2f} efficiency",
                        peak, f.mem_clock_khz / 1e3, f.mem_bus_bits, kMemoryCopyEfficiency)};
  }
  return p2p_expected(be, p);
}

// In the order copy reports them: by case, then device or pair, then method.
std::vector<std::pair<Path, Probe*>> in_copy_order(std::vector<std::pair<Path, Probe*>> paths) {
  const auto rank = [](const Path& p) {
    const int kase = p.kase == copy_case::h2d   ? 0
                     : p.kase == copy_case::d2h ? 1
                     : p.kase == copy_case::d2d ? 2
                                                : 3;
    return std::tuple(kase, p.src, p.dst);
  };
  std::stable_sort(paths.begin(), paths.end(),
                   [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  return paths;
}

class Bandwidth final : public Check {
 public:
  Bandwidth() : Check("bandwidth", "each copy path against what its link should give") {}
  ProbeNeeds needs() const override { return {.copies = true, .p2p = true}; }

  void compare(Context& ctx) override {
    // Host copies run on fewer workers than the reference's cores: a looser grade.
    const Grade g = ctx.backend().name() == "host" ? Grade{0.3, 0.1} : Grade{};
    for (const auto& [p, probe_] : in_copy_order(ctx.probes().paths())) {
      auto [exp, why] = expected(ctx, p);
      const auto probe =
          probe_;  // a variable, not a binding: lambdas capture it (C++20 in clang 14)
      PairedCheck c{name(),
                    p.where(),
                    "GB/s",
                    g,
                    {probe},
                    [probe, exp = exp](std::size_t i) {
                      return std::pair(probe->sample(0, i), exp); },
                    {}};
      c.reference_only = !(exp > 0);
      c.why = [why = why](Verdict v, double, double, double ratio) {
        return v == Verdict::pass || v == Verdict::none
                   ? why
                   : fmt::format(
                         "{:.0f} % of expected ({}); look at the link, its NUMA "
                         "placement and what else runs",
                         ratio * 100, why);
      };
      ctx.add_comparison(std::move(c));
    }
  }

  // What did not run, and copies that delivered wrong data.
  void after_rounds(Context& ctx) override {
    for (const Unmeasured& u : ctx.probes().failed_devices())
      ctx.add_row({name(), fmt::format("device {}", u.src), Verdict::warn, 0, 0, "GB/s",
                   fmt::format("did not run: {}", u.error)});
    for (const WrongData& w : ctx.probes().wrong_data())
      ctx.add_row({name(), w.writers.empty() ? "-" : w.writers.front(), Verdict::fail, 0, 0, "GB/s",
                   fmt::format("the copy delivered wrong data: first wrong byte at offset "
                               "{} (written by {})",
                               w.offset, fmt::join(w.writers, ", "))});
  }
};

}  // namespace

std::unique_ptr<Check> make_bandwidth_check() { return std::make_unique<Bandwidth>(); }

}  // namespace xb::doctor
