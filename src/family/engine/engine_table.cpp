// `engine`: one table per (op, method): per block size, GB/s,
// the time of a loop and per-request (or per-batch) latency percentiles.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "family/engine/engine_bench.hpp"
#include "family/engine/engine_family.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

// A record's part of a run with lanes or several servers: "lane 0",
// "sum" (of the lanes), "10.0.0.2:20000 lane 1", "all" (every server); ""
// for a run of one part.
std::string part_text(const Record& r) {
  if (const auto client = r.get(engine_field::client)) {
    if (*client < 0) {
      const auto j = r.get(engine_field::fairness);
      return j ? fmt::format("total · Jain {:.3f}", *j) : std::string("total");
    }
    const auto share = r.get(engine_field::share);
    return share ? fmt::format("client {} · {:.1f} %", *client, *share * 100)
                 : fmt::format("client {}", *client);
  }
  const auto server = r.get(engine_field::server);
  if (!server) return "";
  const std::int64_t lane = r.get_or(engine_field::lane_id, std::int64_t{-1});
  if (*server == "all") return "all";
  std::string s = server->empty() ? "" : *server;
  std::string which = lane >= 0 ? fmt::format("lane {}", lane) : std::string("sum");
  if (s.empty()) return which;
  return lane >= 0 ? s + " " + which : s;
}

// A figure that a record may lack ("-"): latencies, wire GB/s.
std::string latency_cell(const Record& r, FieldKey<double> key) {
  const auto v = r.get(key);
  return v ? fmt::format("{:.2f}", *v) : std::string("-");
}

// Under a table: each lane's NIC that counted errors, and each WARN.
std::string nic_lines(const std::vector<const Record*>& rows) {
  std::string out;
  for (const Record* r : rows) {
    const std::string where =
        fmt::format("{}nic {}, block {}", part_text(*r).empty() ? "" : part_text(*r) + ", ",
                    field_text(*r, engine_field::nic), field_text(*r, engine_field::block));
    if (const auto e = r->get(engine_field::nic_errors); e && !e->empty())
      out += fmt::format("NIC errors ({}): {}\n", where, *e);
    if (const auto w = r->get(engine_field::nic_warning))
      out += fmt::format("WARN ({}): {}\n", where, *w);
  }
  return out;
}

std::string table(const std::vector<const Record*>& rows) {
  const Record& f = *rows.front();
  const bool async = f.method == "async";
  const bool windowed = f.get(engine_field::window).has_value();
  const bool wire = std::any_of(rows.begin(), rows.end(), [](const Record* r) {
    return r->get(engine_field::wire_gbps).has_value();
  });
  std::size_t part_w = 0;
  Bytes per_loop = 0;
  for (const Record* r : rows) {
    part_w = std::max(part_w, part_text(*r).size());
    per_loop = std::max(per_loop, r->bytes);
  }
  if (part_w > 0) part_w = std::max<std::size_t>(part_w, 4);
  std::string out = fmt::format(
      "\n{} · {} · mode {}{} · {} per loop{}\n", f.kase, f.method,
      field_text(f, engine_field::mode),
      f.get(engine_field::lane) ? " · lane " + field_text(f, engine_field::lane) : "",
      format_size(per_loop),
      windowed ? fmt::format(" · window {} (batch)", field_text(f, engine_field::window))
      : async  ? fmt::format(" · batch {}", field_text(f, engine_field::batch))
               : "");
  if (part_w > 0) out += fmt::format("{:<{}} ", "Part", part_w);
  out += fmt::format("{:>12} {:>9} {:>6} {:>10} {:>10} {:>11} {:>11} {:>11} {:>11}", "Block(Bytes)",
                     "Requests", "Loops", "GB/s", "Max GB/s", "Loop(ms)",
                     async ? "Batch p50" : "Req p50", "p99(us)", "max(us)");
  out += async ? fmt::format(" {:>11} {:>11}", "Submit(us)", "Wait(us)") : "";
  out += wire ? fmt::format(" {:>10}", "Wire GB/s") : "";
  out += windowed ? fmt::format(" {:>10}", "Mmsg/s") : "";
  out += fmt::format(" {:>6}\n", "Check");
  for (const Record* r : rows) {
    if (part_w > 0) out += fmt::format("{:<{}} ", part_text(*r), part_w);
    if (r->status == Status::waived || r->iters == 0) {
      out += fmt::format("{:>12} {}: {}\n", field_text(*r, engine_field::block),
                         to_string(r->status), r->reason);
      continue;
    }
    out += fmt::format("{:>12} {:>9} {:>6} {:>10.2f} {:>10.2f} {:>11.3f} {:>11} {:>11} {:>11}",
                       field_text(*r, engine_field::block), field_text(*r, engine_field::requests),
                       r->iters, r->gbps_median, r->gbps_max, r->time_us.median / 1e3,
                       latency_cell(*r, engine_field::lat_p50_us),
                       latency_cell(*r, engine_field::lat_p99_us),
                       latency_cell(*r, engine_field::lat_max_us));
    if (async)
      out += fmt::format(" {:>11} {:>11}", latency_cell(*r, engine_field::submit_us),
                         latency_cell(*r, engine_field::wait_us));
    if (wire) out += fmt::format(" {:>10}", latency_cell(*r, engine_field::wire_gbps));
    if (windowed) out += fmt::format(" {:>10.3f}", r->get_or(engine_field::msg_rate, 0.0) / 1e6);
    out += fmt::format(" {:>6}\n", !r->verified ? "-" : *r->verified ? "ok" : "FAIL");
  }
  return out + nic_lines(rows);
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
