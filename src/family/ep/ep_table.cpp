// `ep`: one table per method, a row per (tokens, phase): fresh and chained
// times with their MIN over ranks, payload and logical GB/s, where the bytes
// went, the receive imbalance, the slowest rank and #wrong.
#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "family/coll/coll_bench.hpp"
#include "family/coll/coll_ranks.hpp"
#include "family/ep/ep_bench.hpp"
#include "family/ep/ep_family.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

std::string param_text(const Report& r, const char* key) {
  const FieldValue* v = find_field(r.params, key);
  return v ? field_text(*v) : std::string("?");
}

std::string share(std::int64_t part, std::int64_t whole) {
  return whole > 0
             ? fmt::format("{:.0f}", 100.0 * static_cast<double>(part) / static_cast<double>(whole))
             : std::string("-");
}

std::string row(const Record& r) {
  const std::string lead = fmt::format("  {:>6} {:<9}", r.get_or(ep_field::tokens, std::int64_t{0}),
                                       r.get_or(ep_field::phase, std::string()));
  if (r.status == Status::waived || (r.status == Status::failed && r.iters == 0))
    return lead + fmt::format(" {:>10}\n", to_string(r.status));
  const std::int64_t all = r.get_or(ep_field::payload_bytes, std::int64_t{0});
  const std::int64_t wrong = r.get_or(ep_field::wrong, std::int64_t{-1});
  std::string slowest = "-";
  if (r.get(coll_field::slowest_rank))
    slowest = fmt::format("{} {:.2f}x", r.get_or(coll_field::slowest_rank, std::int64_t{-1}),
                          r.get_or(coll_field::rank_spread, 0.0));
  return lead +
         fmt::format(
             " {:>10.1f} {:>9.1f} {:>10.1f} {:>9.1f} {:>6.2f} {:>8.2f} {:>8.2f} {:>5} {:>5} {:>6} "
             "{:>6.2f} {:>12} {:>6}\n",
             r.get_or(ep_field::fresh_us, 0.0), r.get_or(ep_field::fresh_min_us, 0.0),
             r.get_or(ep_field::chained_us, 0.0), r.get_or(ep_field::chained_min_us, 0.0),
             r.get_or(ep_field::fresh_spread, 0.0), r.get_or(ep_field::payload_gbps, 0.0),
             r.get_or(ep_field::logical_gbps, 0.0),
             share(r.get_or(ep_field::local_bytes, std::int64_t{0}), all),
             share(r.get_or(ep_field::node_bytes, std::int64_t{0}), all),
             share(r.get_or(ep_field::remote_bytes, std::int64_t{0}), all),
             r.get_or(ep_field::imbalance, 0.0), slowest,
             wrong < 0 ? std::string("N/A") : std::to_string(wrong));
}

// The host records name for `rank` as their slowest.
std::string host_of(const std::vector<const Record*>& recs, std::int64_t rank) {
  for (const Record* r : recs)
    if (r->get_or(coll_field::slowest_rank, std::int64_t{-1}) == rank)
      return r->get_or(coll_field::slowest_host, std::string("?"));
  return "?";
}

std::string one_method(const std::string& method, const std::vector<const Record*>& recs,
                       const Report& rep) {
  const Record& any = *recs.front();
  std::string out = fmt::format(
      "\n# ep · {} ({}) · {} rank{} · hidden {} · top-{} of {} experts · routing {} · dispatch "
      "{}, combine bf16\n",
      method, any.get_or(ep_field::library, std::string("?")), rep.env.ranks,
      rep.env.ranks == 1 ? "" : "s", any.get_or(ep_field::hidden, std::int64_t{0}),
      any.get_or(ep_field::topk, std::int64_t{0}), any.get_or(ep_field::experts, std::int64_t{0}),
      any.get_or(ep_field::routing, std::string()),
      any.get_or(ep_field::dispatch_dtype, std::string()));
  out += fmt::format(
      "# {:>6} {:<9} {:>10} {:>9} {:>10} {:>9} {:>6} {:>8} {:>8} {:>5} {:>5} {:>6} {:>6} {:>12} "
      "{:>6}\n",
      "tokens", "phase", "fresh", "min", "chained", "min", "spread", "payload", "logical", "local",
      "node", "remote", "recv", "slowest", "#wrong");
  out += fmt::format(
      "# {:>6} {:<9} {:>10} {:>9} {:>10} {:>9} {:>6} {:>8} {:>8} {:>5} {:>5} {:>6} {:>6} {:>12}\n",
      "/rank", "", "(us)", "(us)", "(us)", "(us)", "", "(GB/s)", "(GB/s)", "(%)", "(%)", "(%)",
      "max/avg", "rank");
  for (const Record* r : recs) out += row(*r);
  // The rank named slowest (names_straggler: coll's rule) on most rows.
  std::map<std::int64_t, int> named;
  int measured = 0;
  for (const Record* r : recs) {
    if (r->status != Status::ok) continue;
    ++measured;
    if (names_straggler(*r)) ++named[r->get_or(coll_field::slowest_rank, std::int64_t{-1})];
  }
  for (const auto& [rank, times] : named)
    out += fmt::format("# slowest: rank {} (host {}) on {} of {} rows, >= {}x the others\n", rank,
                       host_of(recs, rank), times, measured, kStragglerSpread);
  // Why rows were not run or failed: each waiver's reason once, each failure's own.
  std::vector<std::string> reasons;
  std::map<std::string, int> times;
  for (const Record* r : recs) {
    if (r->status == Status::waived && times[r->reason]++ == 0) reasons.push_back(r->reason);
    if (r->status == Status::failed)
      out += fmt::format("# failed at {} tokens, {}: {}\n",
                         r->get_or(ep_field::tokens, std::int64_t{0}),
                         r->get_or(ep_field::phase, std::string()), r->reason);
  }
  for (const auto& why : reasons)
    out += fmt::format("# waived ({} record{}): {}\n", times[why], times[why] == 1 ? "" : "s", why);
  return out;
}

}  // namespace

std::string ep_note(const Report& r) {
  return fmt::format(
      "fresh: from a barrier to the rank's completion, each rank's median, MAX over ranks (min: "
      "MIN; spread: MAX/MIN)\n"
      "chained: round trips back to back, no barrier, each phase from the end of the one before; "
      "each rank's median, median over ranks (min: MIN)\n"
      "payload GB/s: bytes moved per rank (dispatch deduplicated by rank, local included, mean "
      "over ranks) / fresh; logical GB/s: DeepEP's count (every selection x message) / fresh\n"
      "local/node/remote: where the payload went (same rank, same node, other node); recv: the "
      "largest load over the mean (dispatch: tokens received, combine: expert rows returned)\n"
      "slowest: the rank with the largest median fresh entry and its ratio to the others' median "
      "(named under the table at >= {}x in at least half the iterations); decimal GB/s; timed "
      "by: {}\n",
      kStragglerSpread, param_text(r, "timed_by"));
}

std::string ep_tables(const Report& r) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Record*>> by_method;
  for (const Record& rec : r.results) {
    if (!by_method.count(rec.method)) order.push_back(rec.method);
    by_method[rec.method].push_back(&rec);
  }
  std::string out;
  for (const std::string& m : order) out += one_method(m, by_method.at(m), r);
  return out;
}

}  // namespace xb
