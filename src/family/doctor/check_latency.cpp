// latency: the time of a 4 KiB h2d copy on device 0, for reference (the
// start-up of the copy path, not link speed: nothing to hold it against).
#include <fmt/format.h>

#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

class Latency final : public Check {
 public:
  Latency() : Check("latency", "a 4 KiB h2d copy's time, for reference") {}

  void report(Context& ctx) override {
    CopyConfig cfg;
    cfg.cases = {copy_case::h2d};
    cfg.methods = {Method::dma};
    cfg.sizes = {4096};
    cfg.iters = 20;
    cfg.warmup = 5;
    cfg.device = 0;
    Registry reg;
    register_copy(reg);
    for (const Record& r : run_copy(ctx.backend(), reg, cfg))
      if (r.status == Status::ok)
        ctx.add_row(
            {name(), fmt::format("h2d 4 KiB device {} dma", r.dst), Verdict::none, r.time_us.median,
             0, "us",
             "for reference (no expected figure: start-up of the copy path, not link speed)"});
  }
};

}  // namespace

std::unique_ptr<Check> make_latency_check() { return std::make_unique<Latency>(); }

}  // namespace xb::doctor
