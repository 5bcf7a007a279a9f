// duplex: h2d and d2h at once on each device against the two alone: a link
// that runs full duplex adds them up (on the host backend, for reference:
// both directions share host memory there).
#include <fmt/format.h>

#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Duplex final : public Check {
 public:
  Duplex() : Check("duplex", "h2d and d2h at once against the two alone (full duplex adds up)") {}
  ProbeNeeds needs() const override { return {.copies = true, .duplex = true}; }

  void compare(Context& ctx) override {
    const bool host = ctx.backend().name() == "host";
    for (const auto& [id, both] : ctx.probes().duplex()) {
      Probe* h = ctx.probes().find_dev(copy_case::h2d, id, Method::dma);
      Probe* b = ctx.probes().find_dev(copy_case::d2h, id, Method::dma);
      ctx.add_comparison(comparison(id, both, h, b, host));
    }
  }

 private:
  PairedCheck comparison(int id, Probe* both, Probe* h, Probe* b, bool host) const {
    PairedCheck c{name(),
                  fmt::format("device {} h2d+d2h dma", id),
                  "GB/s",
                  Grade{0.7, 0.4},
                  {both, h, b},
                  [both, h, b](std::size_t i) {
                    return std::pair(both->sum(i), h->sample(0, i) + b->sample(0, i));
                  },
                  {}};
    const Probe* at_once = both;
    c.reference_only = host;
    c.why = [at_once, host](Verdict v, double, double, double ratio) {
      const double x = median_interval(at_once->gbps[0]).median,
                   y = median_interval(at_once->gbps[1]).median;
      if (host)
        return fmt::format(
            "for reference: both directions share host memory here (h2d {:.2f} "
            "+ d2h {:.2f} GB/s at once)",
            x, y);
      return v == Verdict::pass
                 ? std::string("both directions at once add up: the link runs full duplex")
                 : fmt::format(
                       "h2d {:.2f} + d2h {:.2f} GB/s at once reach {:.0f} % of the two "
                       "alone: the link or the copy engines do not run both directions "
                       "together",
                       x, y, ratio * 100);
    };
    return c;
  }
};

}  // namespace

std::unique_ptr<Check> make_duplex_check() { return std::make_unique<Duplex>(); }

}  // namespace xb::doctor
