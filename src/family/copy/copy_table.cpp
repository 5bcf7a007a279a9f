// The copy tables: ascend-dmi-style tables per case and N x N p2p matrices.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "family/copy/copy_bench.hpp"
#include "family/copy/copy_family.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

std::string title_of(const std::string& kase) {
  if (kase == "h2d") return "Host to Device Test";
  if (kase == "d2h") return "Device to Host Test";
  if (kase == "d2d") return "Device to Device Test";
  return kase;
}

std::string endpoint(int d) { return d < 0 ? "host" : fmt::format("device {}", d); }

// "core", or "core · threads 4" for the runs of a --threads list.
std::string method_label(const Record& r) {
  const auto t = r.get(copy_field::threads);
  return t ? fmt::format("{} · threads {}", r.method, *t) : r.method;
}

bool is_p2p(const Record& r) { return r.kase.rfind("p2p", 0) == 0; }

std::string check_text(const Record& r) {
  if (!r.verified) return "-";
  return *r.verified ? "ok" : "FAIL";
}

// One ascend-dmi style table for records of the same case, pair and method.
std::string case_table(const std::vector<const Record*>& rows) {
  const Record& f = *rows.front();
  std::string out = fmt::format("\n{} ({}) · {} -> {} · method {}\n", title_of(f.kase), f.kase,
                                endpoint(f.src), endpoint(f.dst), method_label(f));
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
    if (local_col) out += fmt::format(" {:>10}", cell(find("p2p_local", s, s), notes));
    out += "\n";
  }
  for (std::size_t i = 0; i < notes.size(); ++i) out += fmt::format("  [{}] {}\n", i + 1, notes[i]);
  return out;
}

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
    const Bytes per_dir = r->kase == "p2p_bidir_total" ? r->bytes / 2 : r->bytes;
    if (std::find(groups.begin(), groups.end(), std::pair(method_label(*r), per_dir)) ==
        groups.end())
      groups.emplace_back(method_label(*r), per_dir);
  }
  for (const auto& [method, bytes] : groups) {
    std::map<P2pKey, const Record*> cells;
    bool bidir = false;
    for (const Record* r : recs) {
      const Bytes per_dir = r->kase == "p2p_bidir_total" ? r->bytes / 2 : r->bytes;
      if (method_label(*r) != method || per_dir != bytes) continue;
      cells[{r->kase, r->src, r->dst}] = r;
      bidir = bidir || r->kase == "p2p_bidir";
    }
    const std::string what =
        fmt::format("method {} · {} ({} bytes) per direction", method, format_size(bytes), bytes);
    out +=
        "\n" + matrix("Unidirectional Peer to Peer Test · " + what + " · Bandwidth Matrix (GB/s)",
                      "p2p", false, cells, n, true);
    if (bidir) {
      out += "\n" + matrix("Bidirectional Peer to Peer Test · " + what +
                               " · Total Bandwidth Matrix (GB/s, both directions)",
                           "p2p_bidir_total", true, cells, n, false);
      out += "\n" +
             matrix("Bidirectional Peer to Peer Test · " + what + " · S->D while D->S runs (GB/s)",
                    "p2p_bidir", false, cells, n, false);
    }
  }
  return out;
}

}  // namespace

std::string copy_tables(const Report& r) {
  std::string out;
  std::vector<std::tuple<std::string, int, int, std::string>> order;
  std::map<std::tuple<std::string, int, int, std::string>, std::vector<const Record*>> sections;
  std::vector<const Record*> p2p;
  for (const auto& rec : r.results) {
    if (is_p2p(rec)) {
      p2p.push_back(&rec);
      continue;
    }
    auto key = std::tuple(rec.kase, rec.src, rec.dst, method_label(rec));
    if (!sections.count(key)) order.push_back(key);
    sections[key].push_back(&rec);
  }
  for (const auto& key : order) out += case_table(sections[key]);
  if (!p2p.empty()) out += p2p_tables(p2p);
  return out;
}

}  // namespace xb
