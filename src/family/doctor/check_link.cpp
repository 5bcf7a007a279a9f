// link: each device's PCIe link as trained against what it can do, the
// lesser of the card's and its slot's maximum speed and width (sysfs): a
// link below that warns; one the slot holds below the card's maximum says so.
#include <fmt/format.h>

#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Link final : public Check {
 public:
  Link() : Check("link", "each device's PCIe link as trained against what card and slot allow") {}

  void report(Context& ctx) override {
    Backend& be = ctx.backend();
    for (const auto& d : be.devices()) ctx.add_row(row(be, d.id));
  }

 private:
  Finding row(Backend& be, int id) const {
    const LinkFacts f = be.link_facts(id);
    Finding row{name(), fmt::format("device {} PCIe", id), Verdict::none, 0, 0, "GB/s raw", ""};
    const auto j = judge_pcie_link(f);
    if (!j) {
      row.why = be.name() == "host" ? "no PCIe link: the host backend's devices are NUMA nodes"
                                    : fmt::format("PCIe link not reported ({})",
                                                  f.source.empty() ? be.name() : f.source);
      return row;
    }
    row.verdict = j->verdict;
    row.measured = j->measured;
    row.expected = j->expected;
    row.why = j->why;
    return row;
  }
};

}  // namespace

std::unique_ptr<Check> make_link_check() { return std::make_unique<Link>(); }

}  // namespace xb::doctor
