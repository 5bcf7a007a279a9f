// doctor's verdict table and its note (the Prometheus text: doctor_prom.cpp).
#include <fmt/format.h>

#include <functional>

#include "family/doctor/doctor_family.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

std::string verdict_of(const Record& rec) {
  return rec.get_or(doctor_field::verdict, std::string("-"));
}

}  // namespace

std::string doctor_table_note(const Report& r) {
  std::string note =
      "each row: a check, where, its verdict, the measured figure against what the link should "
      "give (docs/commands/doctor.md); exit 1 when a row fails\n";
  if (const FieldValue* v = find_field(r.params, "reference_gbps");
      v && std::holds_alternative<double>(*v))
    note += fmt::format("host memory reference (memcpy on all cores): {:.2f} GB/s\n",
                        std::get<double>(*v));
  return note;
}

std::string verdict_table(const std::vector<Record>& results,
                          const std::function<bool(const Record&)>& keep,
                          const VerdictTableLayout& layout) {
  const int cw = layout.check_width, ww = layout.where_width;
  std::string out = fmt::format("\n{:<{}} {:<{}} {:<7} {:>10} {:>10} {:>7}  {}\n", "Check", cw,
                                "Where", ww, "Verdict", "Measured", "Expected", "Ratio", "Why");
  int counts[4] = {0, 0, 0, 0};
  for (const Record& rec : results) {
    if (!keep(rec)) continue;
    const std::string v = verdict_of(rec);
    const double exp = rec.get_or(doctor_field::expected, 0.0);
    counts[v == "PASS" ? 0 : v == "WARN" ? 1 : v == "FAIL" ? 2 : 3]++;
    out += fmt::format(
        "{:<{}} {:<{}} {:<7} {:>10} {:>10} {:>7}  {}\n", rec.kase, cw, rec.method, ww, v,
        layout.figure(rec.get_or(doctor_field::measured, 0.0)),
        exp > 0 ? layout.figure(exp) : std::string("-"),
        exp > 0 ? fmt::format("{:.2f}", rec.get_or(doctor_field::ratio, 0.0)) : std::string("-"),
        rec.get_or(doctor_field::why, std::string()));
  }
  out += fmt::format("\nverdicts: {} PASS, {} WARN, {} FAIL, {} without an expected figure\n",
                     counts[0], counts[1], counts[2], counts[3]);
  return out;
}

std::string doctor_tables(const Report& r) {
  return verdict_table(r.results, [](const Record&) { return true; },
                       {10, 24, [](double x) { return fmt::format("{:.2f}", x); }});
}

}  // namespace xb
