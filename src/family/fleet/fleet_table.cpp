#include "family/fleet/fleet_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "family/doctor/doctor_family.hpp"
#include "family/fleet/fleet_judge.hpp"
#include "family/fleet/fleet_steps.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

const std::set<std::string> kVerdictCases = {"fleet", "census", "host", "link", "latency", "rail"};

// The matrix of one rail (-1: no rails): GB/s from row to column, median
// over passes, slowest hosts first; "" with fewer than two hosts.
std::string matrix_table(const Report& r, std::int64_t rail, const std::string& title) {
  std::map<std::string, int> index;
  std::vector<std::string> names;
  std::vector<PairFigures> sends;  // one direction each
  const auto index_of = [&](const std::string& name) {
    const auto [it, added] = index.try_emplace(name, static_cast<int>(names.size()));
    if (added) names.push_back(name);
    return it->second;
  };
  for (const Record& rec : r.results) {
    if (rec.kase != "send" || rec.get_or(fleet_field::rail, std::int64_t{-1}) != rail ||
        rec.get_or(fleet_field::confirm, false) || !rec.get_or(fleet_field::reached, true) ||
        rec.status == Status::waived)
      continue;
    PairFigures f{index_of(rec.get_or(fleet_field::src_host, std::string())),
                  index_of(rec.get_or(fleet_field::dst_host, std::string()))};
    f.failed = rec.status == Status::failed;
    f.ab = f.failed ? 0 : rec.gbps_median;
    sends.push_back(f);
  }
  if (names.size() > kFullMatrixHosts)
    return fmt::format(
        "\nthe matrix of {} hosts is too wide for a table: `xferbench report` draws it\n",
        names.size());
  if (names.size() < 2) return "";
  std::string out;
  const int n = static_cast<int>(names.size());
  const FleetMatrix m = fleet_matrix(n, sends);
  const auto& g = m.send;
  const std::vector<double> typical = host_typicals(m);
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const double x = typical[static_cast<std::size_t>(a)], y = typical[static_cast<std::size_t>(b)];
    return (std::isnan(x) ? 0 : x) < (std::isnan(y) ? 0 : y);
  });
  std::size_t w = 6;
  for (const auto& s : names) w = std::max(w, s.size());
  out +=
      fmt::format("\n{}send GB/s, row to column (median over passes), slowest hosts first\n{:<{}}",
                  title, "", w + 1);
  for (int c : order)
    out += fmt::format(" {:>{}}", names[static_cast<std::size_t>(c)],
                       std::max<std::size_t>(8, names[static_cast<std::size_t>(c)].size()));
  out += "\n";
  bool partly = false;
  for (int row : order) {
    out += fmt::format("{:<{}}", names[static_cast<std::size_t>(row)], w + 1);
    for (int c : order) {
      const double x = g[static_cast<std::size_t>(row)][static_cast<std::size_t>(c)];
      const std::size_t cw = std::max<std::size_t>(8, names[static_cast<std::size_t>(c)].size());
      // A send that failed is a cell, not a hole: "failed" where it failed in
      // most passes, its figure with a * where in some.
      const bool failures = pair_failures(m, row, c) > 0 && row != c;
      const bool cell_failed = x == 0 && failures;
      partly = partly || (failures && !cell_failed && !std::isnan(x));
      out += row == c || std::isnan(x) ? fmt::format(" {:>{}}", "-", cw)
             : cell_failed             ? fmt::format(" {:>{}}", "failed", cw)
             : failures                ? fmt::format(" {:>{}}", fmt::format("{:.3g}*", x), cw)
                                       : fmt::format(" {:>{}.3g}", x, cw);
    }
    out += "\n";
  }
  if (partly) out += "* the pair failed in some passes (its link or host row says which)\n";
  return out;
}

}  // namespace

std::string fleet_tables(const Report& r) {
  std::string out =
      verdict_table(r.results, [](const Record& rec) { return kVerdictCases.count(rec.kase) > 0; },
                    {8, 28, [](double x) { return fmt::format("{:.3g}", x); }});
  for (const Record& rec : r.results)
    if (rec.status == Status::waived)
      out += fmt::format("waived: {} ({}): {}\n", rec.kase, rec.method, rec.reason);
  std::map<std::int64_t, std::string> rails;  // rail -> its NIC
  for (const Record& rec : r.results)
    if (rec.kase == "send")
      rails.emplace(rec.get_or(fleet_field::rail, std::int64_t{-1}),
                    rec.get_or(fleet_field::nic, std::string()));
  for (const auto& [rail, nic] : rails)
    out +=
        matrix_table(r, rail, rail < 0 ? std::string() : fmt::format("rail {} ({}): ", rail, nic));
  for (const auto& [k, v] : r.summary)
    if (k == "slow_hosts" || k == "slow_links")
      out += fmt::format("{}: {}\n", k, field_text(v).empty() ? "none" : field_text(v));
    else if ((k == "warn_hosts" || k == "warn_links") && !field_text(v).empty())
      out += fmt::format("{}: {}\n", k, field_text(v));
  return out;
}

}  // namespace xb
