// `engine`: one table per (op, method): per block size, GB/s,
// the time of a loop and per-request (or per-batch) latency percentiles.
#include <fmt/format.h>

#include <map>

#include "family/engine/engine_bench.hpp"
#include "family/engine/engine_family.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

std::string table(const std::vector<const Record*>& rows) {
  const Record& f = *rows.front();
  const bool async = f.method == "async";
  const bool windowed = f.get(engine_field::window).has_value();
  std::string out = fmt::format(
      "\n{} · {} · mode {}{} · {} per loop{}\n", f.kase, f.method,
      field_text(f, engine_field::mode),
      f.get(engine_field::lane) ? " · lane " + field_text(f, engine_field::lane) : "",
      format_size(f.bytes),
      windowed ? fmt::format(" · window {} (batch)", field_text(f, engine_field::window))
      : async  ? fmt::format(" · batch {}", field_text(f, engine_field::batch))
               : "");
  out += fmt::format("{:>12} {:>9} {:>6} {:>10} {:>10} {:>11} {:>11} {:>11} {:>11}", "Block(Bytes)",
                     "Requests", "Loops", "GB/s", "Max GB/s", "Loop(ms)",
                     async ? "Batch p50" : "Req p50", "p99(us)", "max(us)");
  out += async ? fmt::format(" {:>11} {:>11}", "Submit(us)", "Wait(us)") : "";
  out += windowed ? fmt::format(" {:>10}", "Mmsg/s") : "";
  out += fmt::format(" {:>6}\n", "Check");
  for (const Record* r : rows) {
    if (r->status == Status::waived || r->iters == 0) {
      out += fmt::format("{:>12} {}: {}\n", field_text(*r, engine_field::block),
                         to_string(r->status), r->reason);
      continue;
    }
    out += fmt::format(
        "{:>12} {:>9} {:>6} {:>10.2f} {:>10.2f} {:>11.3f} {:>11.2f} {:>11.2f} {:>11.2f}",
        field_text(*r, engine_field::block), field_text(*r, engine_field::requests), r->iters,
        r->gbps_median, r->gbps_max, r->time_us.median / 1e3,
        r->get_or(engine_field::lat_p50_us, -1.0), r->get_or(engine_field::lat_p99_us, -1.0),
        r->get_or(engine_field::lat_max_us, -1.0));
    if (async)
      out += fmt::format(" {:>11.2f} {:>11.2f}", r->get_or(engine_field::submit_us, -1.0),
                         r->get_or(engine_field::wait_us, -1.0));
    if (windowed) out += fmt::format(" {:>10.3f}", r->get_or(engine_field::msg_rate, 0.0) / 1e6);
    out += fmt::format(" {:>6}\n", !r->verified ? "-" : *r->verified ? "ok" : "FAIL");
  }
  return out;
}

}  // namespace

std::string engine_tables(const Report& r) {
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
