// clocks: time the clocks were held down by power, thermal, board or
// reliability limits during the run (the backend's clock-hold counters,
// NVML on CUDA, read before and after): the figures above are then below
// what the links give.
#include <fmt/format.h>

#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Clocks final : public Check {
 public:
  Clocks() : Check("clocks", "time the clocks were held down by power or thermal limits") {}

  void start(Context& ctx) override {
    for (const auto& d : ctx.backend().devices())
      before_.push_back(ctx.backend().clock_holds(d.id));
  }

  void report(Context& ctx) override {
    const double run_s = ctx.elapsed_s();
    const auto& devices = ctx.backend().devices();
    for (std::size_t i = 0; i < devices.size() && i < before_.size(); ++i)
      ctx.add_row(row(ctx.backend(), devices[i].id, before_[i], run_s));
  }

 private:
  Finding row(Backend& be, int id, const ClockHolds& b, double run_s) const {
    const ClockHolds a = be.clock_holds(id);
    Finding f{name(), fmt::format("device {}", id), Verdict::none, 0, 0, "s held", ""};
    if (!b.known || !a.known) {
      f.why = fmt::format("not read: {}", !a.why.empty() ? a.why : b.why);
      return f;
    }
    const auto held = clock_held(b, a);
    if (!held) {
      f.why = "the clock-hold counters went back during the run (driver reloaded): re-run";
      return f;
    }
    f.measured = held->seconds;
    f.verdict = grade_clock_hold(held->seconds, run_s);
    const std::string clock =
        a.sm_max_mhz > 0
            ? fmt::format("; SM clock {:.0f} of {:.0f} MHz at the end", a.sm_mhz, a.sm_max_mhz)
            : std::string();
    f.why = f.verdict == Verdict::pass
                ? fmt::format("clocks not held down during the {:.0f} s run{}", run_s, clock)
                : fmt::format(
                      "clocks held down by its {} for {:.1f} s of the {:.0f} s run "
                      "({:.0f} %){}: the figures above are below what its links "
                      "give; check cooling and power limits (nvidia-smi -q -d "
                      "PERFORMANCE)",
                      held->cause, held->seconds, run_s, 100 * held->seconds / run_s, clock);
    return f;
  }

  std::vector<ClockHolds> before_;  // per device, read at the start
};

}  // namespace

std::unique_ptr<Check> make_clocks_check() { return std::make_unique<Clocks>(); }

}  // namespace xb::doctor
