// `kv`: per block count, each rank's get (and rank 0's put) and the summary rows.
#include <fmt/format.h>

#include "family/kv/kv_bench.hpp"
#include "family/kv/kv_family.hpp"
#include "family/kv/kv_handoff.hpp"
#include "report/table_kit.hpp"

namespace xb {

namespace {

// --model: a row per (isl, burst, op).
std::string handoff_table(const Report& r) {
  const Record& any = r.results.front();
  std::string out =
      fmt::format("{} · prefill TP {} -> decode TP {} · {}-token pages · {} layout{}\n",
                  any.get_or(kv_field::model, std::string("?")), field_text(any, kv_field::tp),
                  field_text(any, kv_field::decode_tp), field_text(any, kv_field::page_tokens),
                  any.get_or(kv_field::layout, std::string("?")),
                  any.get_or(kv_field::fragment, false) ? ", fragmented pools" : "");
  out += fmt::format(
      "{:>5} {:>7} {:>5} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7} "
      "{:>7} {:>6}\n",
      "op", "isl", "burst", "desc/req", "desc KiB", "MB/req", "p50(ms)", "p99(ms)", "max(ms)",
      "burst(ms)", "GB/s/rk", "ceiling", "prefill", "check");
  for (const Record& rec : r.results) {
    const double share = rec.get_or(kv_field::prefill_share, -1.0);
    out += fmt::format(
        "{:>5} {:>7} {:>5} {:>9} {:>9.1f} {:>10.2f} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f} "
        "{:>8.2f} {:>7.2f} {:>7} {:>6}\n",
        rec.kase, field_text(rec, kv_field::isl), field_text(rec, kv_field::burst),
        field_text(rec, kv_field::descs),
        static_cast<double>(rec.get_or(kv_field::desc_bytes, std::int64_t{0})) / 1024,
        static_cast<double>(rec.get_or(kv_field::request_bytes, std::int64_t{0})) / 1e6,
        rec.get_or(kv_field::handoff_p50_us, 0.0) / 1e3,
        rec.get_or(kv_field::handoff_p99_us, 0.0) / 1e3,
        rec.get_or(kv_field::handoff_max_us, 0.0) / 1e3, rec.time_us.median / 1e3,
        rec.get_or(kv_field::rank_gbps, 0.0), rec.get_or(kv_field::ceiling_ratio, 0.0),
        share < 0 ? std::string("-") : fmt::format("{:.1f}%", 100 * share),
        !rec.verified   ? "-"
        : *rec.verified ? "ok"
                        : "FAIL");
  }
  return out;
}

}  // namespace

std::string kv_handoff_note() {
  return "a request's handoff: from the burst's start to its last descriptor done, the last of "
         "its ranks (p50/p99/max over requests and rounds); burst: the last request; GB/s/rk: "
         "the burst's bytes / its time / the ranks that move them; ceiling: the same bytes as one "
         "descriptor per rank pair, its time / the burst's (1 = the wire's speed); prefill: the "
         "p50 handoff / (isl / --prefill-tps)\n";
}

std::string kv_tables(const Report& r) {
  if (!r.results.empty() && r.results.front().get(kv_field::model)) return handoff_table(r);
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
