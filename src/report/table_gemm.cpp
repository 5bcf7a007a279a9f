// `gemm-ar`: the time of each mode, then seed 002's analysis figures.
#include <fmt/format.h>

#include "report/table_internal.hpp"

namespace xb {

std::string gemm_tables(const Report& r) {
  std::string out = fmt::format("\n{:<16} {:>12} {:>12} {:>12} {:>7}\n", "Phase", "Median(us)",
                                "Min(us)", "Max(us)", "CV(%)");
  const Record* sum = nullptr;
  for (const auto& rec : r.results) {
    if (rec.kase == "gemm_ar") {
      sum = &rec;
      continue;
    }
    out += fmt::format("{:<16} {:>12.1f} {:>12.1f} {:>12.1f} {:>7.1f}\n", rec.kase,
                       rec.time_us.median, rec.time_us.min, rec.time_us.max, rec.time_us.cv * 100);
  }
  if (!sum) return out;
  auto num = [&](const char* k) { return field_number(*sum, k); };
  out += fmt::format("\nshape {}x{}x{} · {} tiles in {} waves · window {} per rank\n", num("M"),
                     num("K"), num("N"), num("tiles"), num("waves"),
                     format_capacity(static_cast<Bytes>(num("window_bytes"))));
  if (num("speedup") > 0) {
    out += fmt::format(
        "compute-only {:.1f} us · comm-only (RS+AG) {:.1f} us · MPI_Allreduce of the same bytes "
        "{:.1f} us\n",
        num("compute_us"), num("comm_us"), num("mpi_allreduce_us"));
    out += fmt::format("sequential {:.1f} us · pipelined {:.1f} us (compute done at {:.1f} us)\n",
                       num("sequential_us"), num("pipelined_us"), num("compute_done_us"));
    out += fmt::format("speedup {:.3f}x · time saved {:.1f} us · overlap efficiency {:.1f}%\n",
                       num("speedup"), num("time_saved_us"), num("overlap_eff") * 100);
    out += fmt::format(
        "ideal pipelined max(c,m) + min(c,m)/W = {:.1f} us · reached {:.1f}% of ideal\n",
        num("ideal_us"), num("ideal_ratio") * 100);
    out += fmt::format(
        "compute {:.2f} GFLOP/s per rank · comm {:.2f} GB/s (M x N x 4 bytes / comm-only time)\n",
        num("gflops"), num("comm_gbps"));
  }
  if (num("max_err") >= 0)
    out +=
        fmt::format("verification: max |error| {:.3g}, {} elements outside tolerance (all ranks)\n",
                    num("max_err"), num("wrong"));
  return out;
}

}  // namespace xb
