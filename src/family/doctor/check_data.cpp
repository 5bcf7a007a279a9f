// data: every device's copies checked each iteration (h2d, d2h and d2d of
// 1 MiB by every method, `copy --check every`): a device that delivered
// one wrong byte is a FAIL whatever its speed, and is checked again so the
// row says whether the corruption reproduces ("1 of 600, not reproduced").
// Silent data corruption is an active health check of its own (nccl-tests
// -c, HCCL Test -c): a copy that is only timed would pass it.
#include <fmt/format.h>

#include "core/corruption.hpp"
#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {
namespace {

// What a device's checked copies found, summed over its records.
struct Checked {
  std::int64_t copies = 0, wrong = 0;
  std::string first;  // the first record's first wrong place
  std::string error;  // why nothing ran
};

class Data final : public Check {
 public:
  Data() : Check("data", "every copy of each device checked (one wrong byte: FAIL)") {}

  void report(Context& ctx) override {
    for (const auto& d : ctx.backend().devices()) {
      const std::string where = fmt::format("device {}", d.id);
      const Checked c = run(ctx, d.id);
      if (c.copies == 0) {
        ctx.add_row({name(), where, Verdict::none, 0, 0, "% wrong", "did not run: " + c.error});
        continue;
      }
      const RateInterval ci = wilson95(c.wrong, c.copies);
      const double pct = 100.0 * static_cast<double>(c.wrong) / static_cast<double>(c.copies);
      if (c.wrong == 0) {
        ctx.add_row({name(), where, Verdict::pass, 0, 0, "% wrong",
                     fmt::format("0 of {} checked copies wrong: its rate is below {:.2g} % (95 %, "
                                 "Wilson)",
                                 c.copies, 100 * ci.hi)});
        continue;
      }
      const Checked again = run(ctx, d.id);
      ctx.add_row(
          {name(), where, Verdict::fail, pct, 0, "% wrong",
           fmt::format("wrong data in {} of {} checked copies ({:.3g} %, 95 % interval "
                       "{:.3g}-{:.3g} %, Wilson; first: {}); checked again: {} of {} wrong ({}): "
                       "this device's memory, its copy engine or its link corrupts data",
                       c.wrong, c.copies, pct, 100 * ci.lo, 100 * ci.hi, c.first, again.wrong,
                       again.copies, again.wrong ? "reproduced" : "not reproduced")});
    }
  }

 private:
  static Checked run(Context& ctx, int device) {
    CopyConfig cfg;
    cfg.cases = {copy_case::h2d, copy_case::d2h, copy_case::d2d};
    cfg.sizes = {1ULL << 20};
    const std::string& depth = ctx.plan().depth;
    cfg.iters = depth == "quick" ? 50 : depth == "full" ? 500 : 100;
    cfg.warmup = 1;
    cfg.device = device;
    cfg.check_every = true;
    Registry reg;
    register_copy(reg);
    Checked out;
    for (const Record& r : run_copy(ctx.backend(), reg, cfg)) {
      const auto n = r.get(check_field::checked_iters);
      if (!n) {
        if (out.error.empty()) out.error = r.reason;
        continue;
      }
      out.copies += *n;
      out.wrong += r.get_or(check_field::wrong_iters, std::int64_t{0});
      if (out.first.empty()) out.first = r.get_or(check_field::first_bad, std::string());
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Check> make_data_check() { return std::make_unique<Data>(); }

}  // namespace xb::doctor
