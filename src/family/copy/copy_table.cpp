// The copy tables: ascend-dmi-style tables per case, one table per concurrent
// group (each leg's figure and the sum) and N x N p2p matrices.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "family/copy/copy_bench.hpp"
#include "family/copy/copy_family.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

std::string endpoint(int d) {
  if (d == kEveryDevice) return "every device";
  return d < 0 ? "host" : fmt::format("device {}", d);
}

std::string short_end(int d) { return d < 0 ? std::string("host") : std::to_string(d); }

// "core", or "core · threads 4" for the runs of a --threads list.
std::string method_label(const Record& r) {
  const auto t = r.get(copy_field::threads);
  return t ? fmt::format("{} · threads {}", r.method, *t) : r.method;
}

bool is_p2p(const Record& r) { return r.kase.rfind(copy_case::p2p, 0) == 0; }

std::string check_text(const Record& r) {
  if (!r.verified) return "-";
  return *r.verified ? "ok" : "FAIL";
}

// One ascend-dmi style table for records of the same case, pair and method.
std::string case_table(const std::vector<const Record*>& rows) {
  const Record& f = *rows.front();
  std::string out = fmt::format("\n{} ({}) · {} -> {} · method {}{}\n", case_title(f.kase), f.kase,
                                endpoint(f.src), endpoint(f.dst), method_label(f),
                                f.get(copy_field::counted)
                                    ? " · GB/s count the bytes read and written (ascend-dmi's d2d)"
                                    : "");
  out += fmt::format("{:>12} {:>13} {:>15} {:>10} {:>12} {:>12} {:>12} {:>6} {:>5}\n",
                     "Size(Bytes)", "Execute Times", "Bandwidth(GB/s)", "Max(GB/s)", "Median(us)",
                     "Min(us)", "P99(us)", "CV(%)", "Check");
  for (const Record* r : rows) {
    if (r->status == Status::ok || (r->status == Status::failed && r->iters > 0)) {
      out += fmt::format(
          "{:>12} {:>13} {:>15.2f} {:>10.2f} {:>12.2f} {:>12.2f} {:>12.2f} {:>6.1f} {:>5}\n",
          r->bytes, r->iters, r->gbps_median, r->gbps_max, r->time_us.median, r->time_us.min,
          r->time_us.p99, r->time_us.cv * 100, check_text(*r));
    } else {
      out += fmt::format("{:>12} {}: {}\n", r->bytes, to_string(r->status), r->reason);
    }
  }
  return out;
}

// A concurrent group's rows, one per size: its legs and its sum.
struct GroupRow {
  std::vector<const Record*> legs;
  const Record* total = nullptr;
};

// One table per concurrent group (a pattern with a sum): each leg's GB/s
// and the sum, all started together.
std::string group_table(const std::vector<GroupRow>& rows) {
  const Record& f = *rows.front().total;
  const std::string leg_case(summed_case(f.kase));
  const bool both_ways = leg_case.size() > 6 && leg_case.ends_with("_bidir");
  std::string out = fmt::format("\n{} ({}) · {} {} {} at once · method {} · GB/s\n",
                                case_title(leg_case), leg_case, endpoint(f.src),
                                both_ways ? "<->" : "->", endpoint(f.dst), method_label(f));
  out += fmt::format("{:>12} {:>13}", "Size(Bytes)", "Execute Times");
  for (const Record* l : rows.front().legs)
    out += fmt::format(" {:>10}", short_end(l->src) + "->" + short_end(l->dst));
  out += fmt::format(" {:>10} {:>10} {:>5}\n", "Sum", "Sum Max", "Check");
  for (const auto& row : rows) {
    const Record& t = *row.total;
    const Bytes per_leg = row.legs.empty() ? t.bytes : t.bytes / row.legs.size();
    if (t.status != Status::ok && t.iters == 0) {
      out += fmt::format("{:>12} {}: {}\n", per_leg, to_string(t.status), t.reason);
      continue;
    }
    out += fmt::format("{:>12} {:>13}", per_leg, t.iters);
    for (const Record* l : row.legs)
      out += fmt::format(" {:>10}", l->iters ? fmt::format("{:.2f}", l->gbps_median) : "-");
    out += fmt::format(" {:>10.2f} {:>10.2f} {:>5}\n", t.gbps_median, t.gbps_max, check_text(t));
    if (t.status == Status::failed) out += fmt::format("{:>12} failed: {}\n", "", t.reason);
  }
  return out;
}

// Cell text of a p2p matrix: bandwidth, or N/A / FAIL with a footnote.
std::string cell(const Record* r, std::vector<std::string>& notes) {
  if (!r) return "N/A";
  if (r->status == Status::ok) return fmt::format("{:.2f}", r->gbps_median);
  auto it = std::find(notes.begin(), notes.end(), r->reason);
  if (it == notes.end()) it = notes.insert(notes.end(), r->reason);
  const auto n = static_cast<int>(it - notes.begin()) + 1;
  return fmt::format("{}[{}]", r->status == Status::failed ? "FAIL" : "N/A", n);
}

using P2pKey = std::tuple<std::string, int, int>;  // case, src, dst

std::string matrix(const std::string& title, const std::string& kase, bool symmetric,
                   const std::map<P2pKey, const Record*>& cells, int n, bool local_col) {
  std::vector<std::string> notes;
  std::string out = fmt::format("{}\n{:>6}", title, "S\\D");
  for (int d = 0; d < n; ++d) out += fmt::format(" {:>10}", d);
  if (local_col) out += fmt::format(" {:>10}", "local");
  out += "\n";
  auto find = [&](const std::string& k, int s, int d) -> const Record* {
    auto it = cells.find({k, s, d});
    if (it == cells.end() && symmetric) it = cells.find({k, d, s});
    return it == cells.end() ? nullptr : it->second;
  };
  for (int s = 0; s < n; ++s) {
    out += fmt::format("{:>6}", s);
    for (int d = 0; d < n; ++d)
      out += fmt::format(" {:>10}", s == d ? "N/A" : cell(find(kase, s, d), notes));
    if (local_col) out += fmt::format(" {:>10}", cell(find(copy_case::p2p_local, s, s), notes));
    out += "\n";
  }
  for (std::size_t i = 0; i < notes.size(); ++i) out += fmt::format("  [{}] {}\n", i + 1, notes[i]);
  return out;
}

// The links of the pairs measured (records' `link`): the commonest class as
// "every other pair", the others pair by pair ("0<->1" where both ways agree).
std::string links_line(const std::vector<const Record*>& recs) {
  std::map<std::pair<int, int>, std::string> link;  // (src, dst)
  for (const Record* r : recs)
    if (auto l = r->get(copy_field::link); l && r->src >= 0 && r->dst >= 0)
      link[{r->src, r->dst}] = *l;
  if (link.empty()) return "";
  std::map<std::string, std::vector<std::string>> pairs;  // label -> "0<->1", "2->3"
  std::map<std::string, int> count;
  for (const auto& [sd, label] : link) {
    const auto [a, b] = sd;
    const auto back = link.find({b, a});
    const bool both = back != link.end() && back->second == label;
    if (both && b < a) continue;
    pairs[label].push_back(fmt::format("{}{}{}", a, both ? "<->" : "->", b));
    ++count[label];
  }
  const auto common =
      std::max_element(count.begin(), count.end(), [](const auto& x, const auto& y) {
        return x.second < y.second;
      })->first;
  std::string out = "Links:";
  for (const auto& [label, list] : pairs)
    if (label != common) out += fmt::format(" {} {} ·", fmt::join(list, ", "), label);
  out += pairs.size() == 1 ? fmt::format(" {}\n", common)
                           : fmt::format(" every other pair {}\n", common);
  return out;
}

// Bytes per direction of a p2p record: a sum counts both.
Bytes per_direction(const Record& r) { return summed_case(r.kase).empty() ? r.bytes : r.bytes / 2; }

std::string p2p_tables(const std::vector<const Record*>& recs) {
  std::string out;
  // A p2p run on a machine with one device is a single waived record.
  if (std::all_of(recs.begin(), recs.end(), [](const Record* r) { return r->src < 0; })) {
    for (const Record* r : recs)
      out += fmt::format("\nPeer to Peer Test (p2p) · method {}: {}: {}\n", method_label(*r),
                         to_string(r->status), r->reason);
    return out;
  }
  int n = 0;
  std::vector<std::pair<std::string, Bytes>> groups;  // (method, bytes per direction)
  for (const Record* r : recs) {
    n = std::max({n, r->src + 1, r->dst + 1});
    const auto key = std::pair(method_label(*r), per_direction(*r));
    if (std::find(groups.begin(), groups.end(), key) == groups.end()) groups.push_back(key);
  }
  const std::string read = std::string(copy_case::p2p) + "_read";
  for (const auto& [method, bytes] : groups) {
    std::map<P2pKey, const Record*> cells;
    for (const Record* r : recs)
      if (method_label(*r) == method && per_direction(*r) == bytes)
        cells[{r->kase, r->src, r->dst}] = r;
    const auto has = [&](const std::string& k) {
      return std::any_of(cells.begin(), cells.end(),
                         [&](const auto& c) { return std::get<0>(c.first) == k; });
    };
    const std::string what =
        fmt::format("method {} · {} ({} bytes) per direction", method, format_size(bytes), bytes);
    for (const std::string& base : {std::string(copy_case::p2p), read}) {
      if (!has(base) && !has(base + "_bidir")) continue;
      const std::string how = base == read ? " (read: the destination pulls)" : "";
      const auto title = [&](const char* kind, const char* figure) {
        return fmt::format("{} Peer to Peer Test{} · {} · {}", kind, how, what, figure);
      };
      if (has(base))
        out += "\n" + matrix(title("Unidirectional", "Bandwidth Matrix (GB/s)"), base, false, cells,
                             n, true);
      if (!has(base + "_bidir")) continue;
      out += "\n" + matrix(title("Bidirectional", "Total Bandwidth Matrix (GB/s, both directions)"),
                           total_case(base + "_bidir"), true, cells, n, false);
      out += "\n" + matrix(title("Bidirectional", "S->D while D->S runs (GB/s)"), base + "_bidir",
                           false, cells, n, false);
    }
  }
  return out + links_line(recs);
}

}  // namespace

std::string copy_tables(const Report& r) {
  // Cases with a sum: their records are legs of a concurrent group, shown
  // with it; a group's legs come before its sum, size by size.
  std::set<std::string> summed;
  for (const auto& rec : r.results)
    if (!is_p2p(rec) && !summed_case(rec.kase).empty())
      summed.insert(std::string(summed_case(rec.kase)));
  using Key = std::tuple<std::string, int, int, std::string>;  // case, src, dst, method
  std::vector<Key> order;
  std::map<Key, std::vector<const Record*>> sections;
  std::map<Key, std::vector<GroupRow>> group_rows;
  std::map<std::pair<std::string, std::string>, std::vector<const Record*>> pending;
  std::vector<const Record*> p2p;
  for (const auto& rec : r.results) {
    if (is_p2p(rec)) {
      p2p.push_back(&rec);
      continue;
    }
    if (summed.count(rec.kase)) {
      pending[{rec.kase, method_label(rec)}].push_back(&rec);
      continue;
    }
    auto key = Key(rec.kase, rec.src, rec.dst, method_label(rec));
    if (!sections.count(key) && !group_rows.count(key)) order.push_back(key);
    if (const auto base = summed_case(rec.kase); !base.empty()) {
      auto& legs = pending[{std::string(base), method_label(rec)}];
      group_rows[key].push_back({std::move(legs), &rec});
      legs.clear();
    } else {
      sections[key].push_back(&rec);
    }
  }
  std::string out;
  for (const auto& key : order)
    out += sections.count(key) ? case_table(sections[key]) : group_table(group_rows[key]);
  if (!p2p.empty()) out += p2p_tables(p2p);
  return out;
}

}  // namespace xb
