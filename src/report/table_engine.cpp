// `engine` (and `kv`): one table per (op, method): per block size, GB/s,
// the time of a loop and per-request (or per-batch) latency percentiles.
#include <fmt/format.h>

#include <map>

#include "report/table_internal.hpp"

namespace xb {
namespace {

std::string text(const Record& r, const char* key) {
  const FieldValue* v = find_field(r.extra, key);
  return v ? field_text(*v) : "";
}

std::string table(const std::vector<const Record*>& rows) {
  const Record& f = *rows.front();
  const bool async = f.method == "async";
  std::string out =
      fmt::format("\n{} · {} · mode {} · {} per loop{}\n", f.kase, f.method, text(f, "mode"),
                  format_size(f.bytes), async ? fmt::format(" · batch {}", text(f, "batch")) : "");
  out += fmt::format("{:>12} {:>9} {:>6} {:>10} {:>10} {:>11} {:>11} {:>11} {:>11}", "Block(Bytes)",
                     "Requests", "Loops", "GB/s", "Max GB/s", "Loop(ms)",
                     async ? "Batch p50" : "Req p50", "p99(us)", "max(us)");
  out += async ? fmt::format(" {:>11} {:>11}", "Submit(us)", "Wait(us)") : "";
  out += fmt::format(" {:>6}\n", "Check");
  for (const Record* r : rows) {
    if (r->status == Status::waived || r->iters == 0) {
      out += fmt::format("{:>12} {}: {}\n", text(*r, "block"), to_string(r->status), r->reason);
      continue;
    }
    out += fmt::format(
        "{:>12} {:>9} {:>6} {:>10.2f} {:>10.2f} {:>11.3f} {:>11.2f} {:>11.2f} {:>11.2f}",
        text(*r, "block"), text(*r, "requests"), r->iters, r->gbps_median, r->gbps_max,
        r->time_us.median / 1e3, field_number(*r, "lat_p50_us"), field_number(*r, "lat_p99_us"),
        field_number(*r, "lat_max_us"));
    if (async)
      out += fmt::format(" {:>11.2f} {:>11.2f}", field_number(*r, "submit_us"),
                         field_number(*r, "wait_us"));
    out += fmt::format(" {:>6}\n", !r->verified ? "-" : *r->verified ? "ok" : "FAIL");
  }
  return out;
}

}  // namespace

std::string kv_tables(const Report& r) {
  std::string out =
      "get: each rank reads its blocks from the others; put: rank 0 writes them to every peer\n";
  std::string last;
  for (const auto& rec : r.results) {
    const std::string blocks = text(rec, "blocks");
    if (blocks != last) {
      out += fmt::format("\n{} blocks of {} B\n{:>8} {:>6} {:>14} {:>11} {:>11} {:>10} {:>6}\n",
                         blocks, text(rec, "block_bytes"), "What", "Rank", "Bytes", "Time(ms)",
                         "p99(ms)", "GB/s", "Check");
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

std::string engine_tables(const Report& r) {
  if (r.command == "kv") return kv_tables(r);
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const Record*>> groups;
  for (const auto& rec : r.results) {
    const auto key = std::pair(rec.kase, rec.method);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&rec);
  }
  std::string out;
  for (const auto& [k, v] : r.summary)
    if (k != "avg_busbw") out += fmt::format("{}: {}\n", k, field_text(v));
  for (const auto& key : order) out += table(groups[key]);
  return out;
}

}  // namespace xb
