// `kv`: per block count, each rank's get (and rank 0's put) and the summary rows.
#include <fmt/format.h>

#include "family/kv/kv_bench.hpp"
#include "family/kv/kv_family.hpp"
#include "report/table_kit.hpp"

namespace xb {

std::string kv_tables(const Report& r) {
  std::string out =
      "get: each rank reads its blocks from the others; put: rank 0 writes them to every peer\n";
  std::string last;
  for (const auto& rec : r.results) {
    const std::string blocks = field_text(rec, kv_field::blocks);
    if (blocks != last) {
      out += fmt::format("\n{} blocks of {} B\n{:>8} {:>6} {:>14} {:>11} {:>11} {:>10} {:>6}\n",
                         blocks, field_text(rec, kv_field::block_bytes), "What", "Rank", "Bytes",
                         "Time(ms)", "p99(ms)", "GB/s", "Check");
      last = blocks;
    }
    if (rec.status == Status::waived) {
      out += fmt::format("{:>8} {}: {}\n", rec.kase, to_string(rec.status), rec.reason);
      continue;
    }
    out += fmt::format("{:>8} {:>6} {:>14} {:>11.3f} {:>11.3f} {:>10.2f} {:>6}\n", rec.kase,
                       rec.src < 0 ? std::string("all") : std::to_string(rec.src), rec.bytes,
                       rec.time_us.median / 1e3, rec.time_us.p99 / 1e3, rec.gbps_median,
                       !rec.verified   ? "-"
                       : *rec.verified ? "ok"
                                       : "FAIL");
  }
  return out;
}

}  // namespace xb
