// `latency`: the chase table (ns per load, one row per memory and chaser)
// and the ping-pong table (one-way us, one row per size), each with its
// percentiles.
#include <fmt/format.h>

#include "family/latency/latency_bench.hpp"
#include "family/latency/latency_family.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

std::string check_text(const Record& r) { return !r.verified ? "-" : *r.verified ? "ok" : "FAIL"; }

std::string side(int device) { return device < 0 ? "host" : fmt::format("{}", device); }

std::string chase_table(const std::vector<const Record*>& recs) {
  const Record& f = *recs.front();
  std::string out = fmt::format(
      "\nPointer chase · memory of device b loaded by device a ({}) · ns per load · {} loads per "
      "sample\n",
      f.method == "core" ? "one thread on a's cores" : "a's SMs",
      f.get_or(latency_field::loads, std::int64_t{0}));
  out += fmt::format("{:>6} {:>6} {:<18} {:>9} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6}\n",
                     "mem b", "by a", "link", "chain", "iters", "p50 ns", "p99 ns", "max ns",
                     "min ns", "mean ns", "check");
  for (const Record* r : recs) {
    const std::int64_t chain = r->get_or(latency_field::chain_bytes, std::int64_t{0});
    out += fmt::format("{:>6} {:>6} {:<18} {:>9}", side(r->src), side(r->dst),
                       r->get_or(latency_field::link, std::string("-")),
                       chain ? format_size(static_cast<Bytes>(chain)) : "-");
    if (r->status != Status::ok || r->iters == 0) {
      out += fmt::format("  {}: {}\n", to_string(r->status), r->reason);
      continue;
    }
    const Stats& t = r->time_us;
    out += fmt::format(" {:>6} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>6}\n", r->iters,
                       t.median * 1e3, t.p99 * 1e3, t.max * 1e3, t.min * 1e3, t.mean * 1e3,
                       check_text(*r));
  }
  return out;
}

// Every record not measured for one and the same reason (one rank): that reason, once.
bool all_same_unmeasured(const std::vector<const Record*>& recs) {
  for (const Record* r : recs)
    if (r->status == Status::ok || r->status != recs.front()->status ||
        r->reason != recs.front()->reason)
      return false;
  return recs.size() > 1;
}

std::string pingpong_table(const std::vector<const Record*>& recs) {
  const Record& f = *recs.front();
  if (all_same_unmeasured(recs))
    return fmt::format("\nPing-pong · rank {} <-> rank {} · {} .. {} B: {}: {}\n", f.src, f.dst,
                       f.bytes, recs.back()->bytes, to_string(f.status), f.reason);
  std::string out = fmt::format(
      "\nPing-pong · rank {} <-> rank {} · one-way us = round trip / 2 (as osu_latency)\n", f.src,
      f.dst);
  out += fmt::format("{:>12} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6}\n", "Size(Bytes)", "Iters",
                     "p50 us", "p99 us", "max us", "min us", "mean us", "check");
  for (const Record* r : recs) {
    out += fmt::format("{:>12}", r->bytes);
    if (r->status != Status::ok || r->iters == 0) {
      out += fmt::format("  {}: {}\n", to_string(r->status), r->reason);
      continue;
    }
    const Stats& t = r->time_us;
    out += fmt::format(" {:>7} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>6}\n", r->iters,
                       t.median, t.p99, t.max, t.min, t.mean, check_text(*r));
  }
  return out;
}

}  // namespace

std::string latency_tables(const Report& r) {
  const CaseGroups g = group_by_case(r);
  std::string out;
  for (const auto& kase : g.order) {
    const auto& recs = g.by_case.at(kase);
    out += kase == "chase" ? chase_table(recs) : pingpong_table(recs);
  }
  return out;
}

}  // namespace xb
