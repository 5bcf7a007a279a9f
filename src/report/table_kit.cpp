// The table kit shared by every family's tables.
#include "report/table_kit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/corruption.hpp"

namespace xb {

std::string table_header(const Report& r) {
  const auto& e = r.env;
  return fmt::format("xferbench {} · backend {} · {} device{} · {} · {} ({} cores){}\n{}",
                     r.command, e.backend, e.devices.size(), e.devices.size() == 1 ? "" : "s",
                     e.host, e.cpu, e.cores, e.ranks > 1 ? fmt::format(" · {} ranks", e.ranks) : "",
                     e.backend_note.empty() ? "" : "backend: " + e.backend_note + "\n");
}

std::string table_footer(const Report& r) {
  std::map<Status, int> count;
  for (const auto& x : r.results) ++count[x.status];
  std::string out;
  bool first = true;
  for (const auto& [k, v] : r.summary) {
    const bool pages = k == "host_pages";  // --host-mem huge: what the buffers got
    if (k.rfind("crossover", 0) != 0 && !pages) continue;
    out += fmt::format("{}{}{}\n", first ? "\n" : "", pages ? "host pages: " : "", field_text(v));
    first = false;
  }
  out += fmt::format("\n{} results: {} ok, {} waived, {} failed\n", r.results.size(),
                     count[Status::ok], count[Status::waived], count[Status::failed]);
  out += check_every_line(r.results);
  for (const auto& x : r.results) {
    if (x.status != Status::failed) continue;
    if (x.bytes == 0)  // a verdict (doctor, fleet): its check and where, nothing moved
      out += fmt::format("  failed: {} {}: {}\n", x.kase, x.method, x.reason);
    else
      out += fmt::format("  failed: {} {} {}->{} {} B: {}\n", x.kase, x.method, x.src, x.dst,
                         x.bytes, x.reason);
  }
  return out;
}

std::string check_every_line(const std::vector<Record>& results) {
  std::int64_t checked = 0, wrong = 0, records = 0, fewest = -1;
  for (const auto& x : results) {
    const auto c = x.get(check_field::checked_iters);
    if (!c) continue;
    ++records;
    checked += *c;
    const std::int64_t w = x.get_or(check_field::wrong_iters, std::int64_t{0});
    wrong += w;
    if (w == 0 && (fewest < 0 || *c < fewest)) fewest = *c;
  }
  if (!records) return "";
  std::string out = fmt::format("--check every: {} iterations checked in {} record{}, {} wrong",
                                checked, records, records == 1 ? "" : "s", wrong);
  if (fewest > 0)
    out += fmt::format(
        "; a record with none wrong in {} bounds its rate below {:.3g} % (95 %, "
        "Wilson)",
        fewest, 100 * wilson95(0, fewest).hi);
  return out + "\n";
}

std::string field_text(const FieldValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          return fmt::format("{}", fmt::join(x, ","));
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          return fmt::format("{:.6g}", fmt::join(x, ","));
        } else if constexpr (std::is_same_v<T, double>) {
          return fmt::format("{:.6g}", x);
        } else {
          return fmt::format("{}", x);
        }
      },
      v);
}

const FieldValue* find_field(const std::vector<Field>& fields, const std::string& key) {
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

CaseGroups group_by_case(const Report& r) {
  CaseGroups g;
  for (const auto& rec : r.results) {
    if (!g.by_case.count(rec.kase)) g.order.push_back(rec.kase);
    g.by_case[rec.kase].push_back(&rec);
  }
  return g;
}

}  // namespace xb
