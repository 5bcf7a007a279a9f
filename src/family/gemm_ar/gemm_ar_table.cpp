// `gemm-ar`: the time of each mode, then the analysis figures of pto-isa's
// GEMM+AllReduce example.
#include <fmt/format.h>

#include "family/gemm_ar/gemm_ar_bench.hpp"
#include "family/gemm_ar/gemm_ar_family.hpp"
#include "report/table_kit.hpp"

namespace xb {

std::string gemm_tables(const Report& r) {
  std::string out = fmt::format("\n{:<18} {:>12} {:>12} {:>12} {:>7}\n", "Phase", "Median(us)",
                                "Min(us)", "Max(us)", "CV(%)");
  const Record* sum = nullptr;
  std::string library = "library allreduce";
  std::vector<const Record*> interference;
  for (const auto& rec : r.results) {
    if (rec.kase == "gemm_ar") {
      sum = &rec;
      continue;
    }
    if (rec.kase == "interference") {
      interference.push_back(&rec);
      continue;
    }
    if (rec.kase == "library_allreduce")
      library = rec.method == "mpi"    ? "MPI_Allreduce"
                : rec.method == "nccl" ? "ncclAllReduce"
                                       : rec.method;
    if (rec.status == Status::waived) {
      out += fmt::format("{:<18} waived: {}\n", rec.kase, rec.reason);
      continue;
    }
    out += fmt::format("{:<18} {:>12.1f} {:>12.1f} {:>12.1f} {:>7.1f}\n", rec.kase,
                       rec.time_us.median, rec.time_us.min, rec.time_us.max, rec.time_us.cv * 100);
  }
  if (!interference.empty()) {
    out += fmt::format("\n{:>11} {:>14} {:>14} {:>14} {:>14} {:>9} {:>9} {:>8}\n", "CommBlocks",
                       "Compute(us)", "Comm(us)", "Compute+(us)", "Comm+(us)", "CompSlow",
                       "CommSlow", "Wrong");
    for (const Record* rec : interference) {
      auto d = [&](auto key) { return rec->get_or(key, -1.0); };
      out += fmt::format(
          "{:>11} {:>14.1f} {:>14.1f} {:>14.1f} {:>14.1f} {:>8.3f}x {:>8.3f}x {:>8}\n",
          rec->get_or(gemm_field::comm_blocks, std::int64_t{-1}), d(gemm_field::compute_alone_us),
          d(gemm_field::comm_alone_us), d(gemm_field::compute_both_us), d(gemm_field::comm_both_us),
          d(gemm_field::compute_slowdown), d(gemm_field::comm_slowdown),
          rec->get_or(gemm_field::wrong, std::int64_t{-1}));
    }
    out += "Compute+/Comm+: the GEMM and a prefilled comm at once; slowdown = beside / alone\n";
    std::int64_t checked = 0, wrong = 0;
    for (const Record* rec : interference)
      if (const auto w = rec->get_or(gemm_field::wrong, std::int64_t{-1}); w >= 0) {
        ++checked;
        wrong += w;
      }
    if (checked > 0)
      out += fmt::format(
          "verification: {} of {} --comm-blocks values checked (comm alone and beside the GEMM, "
          "into poisoned outputs), {} elements outside tolerance (all ranks)\n",
          checked, interference.size(), wrong);
  }
  if (!sum) return out;
  auto num = [&](auto key) {
    using T = typename decltype(key)::type;
    return sum->get_or(key, T(-1));
  };
  out += fmt::format("\nshape {}x{}x{} · {} tiles in {} waves · window {} per rank\n",
                     num(gemm_field::M), num(gemm_field::K), num(gemm_field::N),
                     num(gemm_field::tiles), num(gemm_field::waves),
                     format_capacity(static_cast<Bytes>(num(gemm_field::window_bytes))));
  if (num(gemm_field::speedup) > 0) {
    out += fmt::format("compute-only {:.1f} us · comm-only (RS+AG) {:.1f} us{}\n",
                       num(gemm_field::compute_us), num(gemm_field::comm_us),
                       num(gemm_field::library_allreduce_us) > 0
                           ? fmt::format(" · {} of the same bytes {:.1f} us", library,
                                         num(gemm_field::library_allreduce_us))
                           : std::string());
    out += fmt::format("sequential {:.1f} us · pipelined {:.1f} us (compute done at {:.1f} us)\n",
                       num(gemm_field::sequential_us), num(gemm_field::pipelined_us),
                       num(gemm_field::compute_done_us));
    out += fmt::format(
        "speedup {:.3f}x · time saved {:.1f} us · {}\n", num(gemm_field::speedup),
        num(gemm_field::time_saved_us),
        sum->get_or(gemm_field::overlap_note,
                    fmt::format("overlap efficiency {:.1f}%", num(gemm_field::overlap_eff) * 100)));
    const double ratio = num(gemm_field::ideal_ratio);
    out += fmt::format("ideal pipelined max(c,m) + min(c,m)/W = {:.1f} us · {}\n",
                       num(gemm_field::ideal_us),
                       ratio <= 1 ? fmt::format("reached {:.1f}% of ideal", ratio * 100)
                                  : std::string("pipelined came in under the ideal: the phases "
                                                "ran under different conditions, no figure"));
    out += fmt::format(
        "compute {:.2f} GFLOP/s per rank ({:.2f} TFLOP/s) · comm {:.2f} GB/s (M x N x 4 bytes / "
        "comm-only time)\n",
        num(gemm_field::gflops), num(gemm_field::gflops) / 1e3, num(gemm_field::comm_gbps));
  }
  if (num(gemm_field::max_err) >= 0)
    out +=
        fmt::format("verification: max |error| {:.3g}, {} elements outside tolerance (all ranks)\n",
                    num(gemm_field::max_err), num(gemm_field::wrong));
  return out;
}

}  // namespace xb
