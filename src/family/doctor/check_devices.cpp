// devices: the devices against each other, per case and method: each one
// against its peers' median (3 or more) or best (2), within 20 % passes.
#include <fmt/format.h>

#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Devices final : public Check {
 public:
  Devices()
      : Check("devices", "each device against its peers, per case and method (within 20 %)") {}
  ProbeNeeds needs() const override { return {.copies = true}; }

  void compare(Context& ctx) override {
    if (ctx.backend().devices().size() < 2) {
      ctx.add_row({name(), "all", Verdict::none, 0, 0, "", "one device: no peers to compare"});
      return;
    }
    const Probes& probes = ctx.probes();
    for (const char* kase : {copy_case::h2d, copy_case::d2h, copy_case::d2d})
      for (Method m : probes.methods()) {
        std::vector<Probe*> group;
        for (const auto& d : ctx.backend().devices())
          if (Probe* p = probes.find_dev(kase, d.id, m)) group.push_back(p);
        if (group.size() < 2) continue;
        const std::size_t n = group.size();
        ctx.add_peer_comparisons(
            name(), group, [&probes, n](const Probe& p, Verdict v, double ratio) {
              return v == Verdict::pass
                         ? fmt::format("within 20 % of its peers ({} devices)", n)
                         : fmt::format(
                               "device {} is at {:.0f} % of its peers' {}: this device or its "
                               "slot is slow",
                               probes.path_of(p).device(), ratio * 100, n >= 3 ? "median" : "best");
            });
      }
  }
};

}  // namespace

std::unique_ptr<Check> make_devices_check() { return std::make_unique<Devices>(); }

}  // namespace xb::doctor
