// noise: the spread of every measurement over the main rounds, and the
// load around them: a noisy one held its verdicts to WARN or was measured
// again. Read after the rounds, before a FAIL's fresh rounds reset them.
#include <fmt/format.h>

#include <algorithm>

#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Noise final : public Check {
 public:
  Noise() : Check("noise", "the spread of every copy measurement over the rounds (CV over 10 %)") {}
  // Every copy it can: the node's noise shows on any of them.
  ProbeNeeds needs() const override { return {.copies = true, .p2p = true}; }

  void after_rounds(Context& ctx) override {
    double worst = 0;
    std::size_t series = 0, noisy = 0;
    for (const Probe& p : ctx.probes().all())
      for (std::size_t k = 0; k < p.ops.size(); ++k) {
        const double cv = p.cv(k);
        ++series;
        worst = std::max(worst, cv);
        if (cv <= kNoiseLimit) continue;
        ++noisy;
        ctx.add_row({name(),
                     p.ops.size() > 1
                         ? fmt::format("{} {}", p.label, k ? copy_case::d2h : copy_case::h2d)
                         : p.label,
                     Verdict::warn, cv * 100, kNoiseLimit * 100, "% CV",
                     fmt::format("the node was busy during this measurement ({} over {} rounds): "
                                 "verdicts that read it were measured again or held to WARN",
                                 busy_text(cv, ctx.load()), p.rounds())});
      }
    if (noisy == 0 && series > 0)
      ctx.add_row(
          {name(), "all", Verdict::pass, worst * 100, kNoiseLimit * 100, "% CV",
           fmt::format("all {} copy measurements under {:.0f} % CV over {} rounds ({})", series,
                       kNoiseLimit * 100, ctx.rounds(), busy_text(worst, ctx.load()))});
  }
};

}  // namespace

std::unique_ptr<Check> make_noise_check() { return std::make_unique<Noise>(); }

}  // namespace xb::doctor
