// numa: h2d from the default pinned allocation against pinned memory on
// each device's own NUMA node: a buffer on the far node costs bandwidth.
#include <fmt/format.h>

#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Numa final : public Check {
 public:
  Numa() : Check("numa", "the default pinned buffer's h2d against one on the device's node") {}
  ProbeNeeds needs() const override { return {.copies = true, .near = true}; }

  void compare(Context& ctx) override {
    for (const Unmeasured& u : ctx.probes().no_near())
      ctx.add_row({name(), fmt::format("h2d device {} dma", u.src), Verdict::none, 0, 0, "GB/s",
                   fmt::format("not measured: {}", u.error)});
    for (const auto& [id, near] : ctx.probes().near()) {
      Probe* dflt = ctx.probes().find_dev(copy_case::h2d, id, Method::dma);
      const int node = ctx.backend().devices()[static_cast<std::size_t>(id)].numa;
      ctx.add_comparison(comparison(id, node, dflt, near));
    }
  }

 private:
  PairedCheck comparison(int id, int node, Probe* dflt, Probe* near) const {
    return {
        name(),
        fmt::format("h2d device {} dma", id),
        "GB/s",
        Grade{},
        {dflt, near},
        [dflt, near](std::size_t i) { return std::pair(dflt->sample(0, i), near->sample(0, i)); },
        [node](Verdict v, double, double, double ratio) {
          return v == Verdict::pass
                     ? fmt::format(
                           "the default pinned buffer does as well as one on the "
                           "device's NUMA node ({})",
                           node)
                     : fmt::format(
                           "the default pinned buffer reaches {:.0f} % of one on the "
                           "device's NUMA node {}: it is misplaced (bind it there: "
                           "numactl --membind={} or the allocator's NUMA option)",
                           ratio * 100, node, node);
        }};
  }
};

}  // namespace

std::unique_ptr<Check> make_numa_check() { return std::make_unique<Numa>(); }

}  // namespace xb::doctor
