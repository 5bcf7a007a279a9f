// link: each device's PCIe link as trained against its maximum speed and
// width (sysfs): a link below its maximum warns.
#include <fmt/format.h>

#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Link final : public Check {
 public:
  Link() : Check("link", "each device's PCIe link as trained against its maximum") {}

  void report(Context& ctx) override {
    Backend& be = ctx.backend();
    for (const auto& d : be.devices()) ctx.add_row(row(be, d.id));
  }

 private:
  Finding row(Backend& be, int id) const {
    const LinkFacts f = be.link_facts(id);
    const auto cur = parse_link_speed(f.pcie_current_speed);
    const auto max = parse_link_speed(f.pcie_max_speed);
    Finding row{name(), fmt::format("device {} PCIe", id), Verdict::none, 0, 0, "GB/s raw", ""};
    if (!cur || !max || f.pcie_width <= 0 || f.pcie_max_width <= 0) {
      row.why = be.name() == "host" ? "no PCIe link: the host backend's devices are NUMA nodes"
                                    : fmt::format("PCIe link not reported ({})",
                                                  f.source.empty() ? be.name() : f.source);
      return row;
    }
    row.measured = pcie_lane_gbps(*cur) * f.pcie_width;
    row.expected = pcie_lane_gbps(*max) * f.pcie_max_width;
    const bool below = *cur < *max || f.pcie_width < f.pcie_max_width;
    row.verdict = below ? Verdict::warn : Verdict::pass;
    row.why =
        below ? fmt::format(
                    "trained at {} x{}, below its maximum {} x{}: reseat the card, "
                    "check the slot and BIOS link settings (or it idles in a "
                    "power-saving state: re-check under load)",
                    pcie_generation(*cur), f.pcie_width, pcie_generation(*max), f.pcie_max_width)
              : fmt::format("{} x{} as its maximum", pcie_generation(*cur), f.pcie_width);
    return row;
  }
};

}  // namespace

std::unique_ptr<Check> make_link_check() { return std::make_unique<Link>(); }

}  // namespace xb::doctor
