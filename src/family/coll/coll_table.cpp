// `coll`: nccl-tests' table, one per collective: size, count, type, redop,
// root, then time/algbw/busbw/#wrong out of place and in place, and the
// average bus bandwidth.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "family/coll/coll_bench.hpp"
#include "family/coll/coll_family.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

std::string placement(const Record* r) {
  if (!r) return fmt::format(" {:>10} {:>8} {:>8} {:>7}", "-", "-", "-", "-");
  if (r->status == Status::waived)
    return fmt::format(" {:>10} {:>8} {:>8} {:>7}", "waived", "-", "-", "-");
  const std::int64_t wrong = r->get_or(coll_field::wrong, std::int64_t{-1});
  return fmt::format(" {:>10.2f} {:>8.2f} {:>8.2f} {:>7}", r->time_us.median,
                     r->get_or(coll_field::algbw, -1.0), r->get_or(coll_field::busbw, -1.0),
                     wrong < 0 ? std::string("N/A") : std::to_string(wrong));
}

// The rank named slowest most often (names_straggler), with its largest spread.
std::string slowest_line(const std::vector<const Record*>& recs) {
  std::map<std::int64_t, std::pair<int, const Record*>> named;  // rank: times, worst record
  int measured = 0;
  for (const Record* r : recs) {
    if (r->status != Status::ok) continue;
    ++measured;
    if (!names_straggler(*r)) continue;
    auto& [times, worst] = named[r->get_or(coll_field::slowest_rank, std::int64_t{-1})];
    ++times;
    if (!worst ||
        r->get_or(coll_field::rank_spread, 0.0) > worst->get_or(coll_field::rank_spread, 0.0))
      worst = r;
  }
  if (named.empty()) return "";
  const auto most = std::max_element(named.begin(), named.end(), [](const auto& a, const auto& b) {
    return a.second.first < b.second.first;
  });
  const Record& w = *most->second.second;
  return fmt::format(
      "# slowest: rank {} (host {}, {:.1f}× the median rank) in {} of {} records, most at {} B "
      "{}\n",
      most->first, w.get_or(coll_field::slowest_host, std::string("?")),
      w.get_or(coll_field::rank_spread, 0.0), most->second.first, measured, w.bytes,
      w.get_or(coll_field::inplace, false) ? "in place" : "out of place");
}

std::string one_collective(const std::string& op, const std::vector<const Record*>& recs,
                           const Report& rep) {
  using Key = std::tuple<std::string, std::string, Bytes>;  // dtype, redop, size
  std::vector<Key> order;
  std::map<Key, std::pair<const Record*, const Record*>> rows;  // out-of-place, in-place
  for (const Record* r : recs) {
    Key k{r->get_or(coll_field::dtype, std::string()), r->get_or(coll_field::redop, std::string()),
          r->bytes};
    if (!rows.count(k)) order.push_back(k);
    (r->get_or(coll_field::inplace, false) ? rows[k].second : rows[k].first) = r;
  }
  const std::string skew = recs.front()->get_or(coll_field::skew, std::string());
  std::string out =
      fmt::format("\n# Collective {} · {} · {} rank{}{}\n", op, recs.front()->method, rep.env.ranks,
                  rep.env.ranks == 1 ? "" : "s", skew.empty() ? "" : " · skew " + skew);
  out += fmt::format("# {:>11} {:>12} {:>7} {:>6} {:>5}  {:^36}  {:>22}\n", "", "", "", "", "",
                     "out-of-place", "in-place");
  out += fmt::format(
      "# {:>11} {:>12} {:>7} {:>6} {:>5} {:>10} {:>8} {:>8} {:>7} {:>10} {:>8} {:>8} {:>7}\n",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
      "busbw", "#wrong");
  out += fmt::format(
      "# {:>11} {:>12} {:>7} {:>6} {:>5} {:>10} {:>8} {:>8} {:>7} {:>10} {:>8} {:>8}\n", "(B)",
      "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)");
  for (const auto& k : order) {
    const auto& [oop, ip] = rows[k];
    const Record& any = oop ? *oop : *ip;
    out += fmt::format("  {:>11} {:>12} {:>7} {:>6} {:>5}", any.bytes,
                       field_text(any, coll_field::count), std::get<0>(k), std::get<1>(k), any.src);
    out += placement(oop) + placement(ip) + "\n";
  }
  if (const FieldValue* avg = find_field(rep.summary, "avg_busbw_" + op);
      avg && std::holds_alternative<double>(*avg))
    out += fmt::format("# Avg bus bandwidth    : {:.4f} GB/s\n", std::get<double>(*avg));
  out += slowest_line(recs);
  // Why the waived rows were not run, each reason once.
  std::vector<std::string> reasons;
  std::map<std::string, int> times;
  for (const Record* r : recs)
    if (r->status == Status::waived && times[r->reason]++ == 0) reasons.push_back(r->reason);
  for (const auto& why : reasons)
    out += fmt::format("# waived ({} record{}): {}\n", times[why], times[why] == 1 ? "" : "s", why);
  return out;
}

}  // namespace

std::string coll_tables(const Report& r) {
  const CaseGroups g = group_by_case(r);
  std::string out;
  for (const auto& op : g.order) out += one_collective(op, g.by_case.at(op), r);
  return out;
}

}  // namespace xb
