// direction: h2d against d2h of each device and method, the slower one
// measured against the faster: within 20 % passes.
#include <fmt/format.h>

#include <algorithm>

#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Direction final : public Check {
 public:
  Direction() : Check("direction", "h2d against d2h of each device and method (within 20 %)") {}
  ProbeNeeds needs() const override { return {.copies = true}; }

  void compare(Context& ctx) override {
    const Probes& probes = ctx.probes();
    for (const auto& d : ctx.backend().devices())
      for (Method m : probes.methods()) {
        Probe* h = probes.find_dev(copy_case::h2d, d.id, m);
        Probe* b = probes.find_dev(copy_case::d2h, d.id, m);
        if (h && b) ctx.add_comparison(comparison(d.id, m, h, b));
      }
  }

 private:
  PairedCheck comparison(int id, Method m, Probe* h, Probe* b) const {
    return {name(),
            fmt::format("device {} {}", id, to_string(m)),
            "GB/s",
            Grade{},
            {h, b},
            [h, b](std::size_t i) {
              const double x = h->sample(0, i), y = b->sample(0, i);
              return std::pair(std::min(x, y), std::max(x, y));
            },
            [h, b, id](Verdict v, double, double, double ratio) {
              if (v == Verdict::pass) return std::string("h2d and d2h within 20 %");
              const bool h_slow =
                  median_interval(h->gbps[0]).median < median_interval(b->gbps[0]).median;
              return fmt::format(
                  "{} is {:.0f} % below {} on device {}: one direction of its "
                  "link or its DMA engine is slow",
                  h_slow ? copy_case::h2d : copy_case::d2h, (1 - ratio) * 100,
                  h_slow ? copy_case::d2h : copy_case::h2d, id);
            }};
  }
};

}  // namespace

std::unique_ptr<Check> make_direction_check() { return std::make_unique<Direction>(); }

}  // namespace xb::doctor
