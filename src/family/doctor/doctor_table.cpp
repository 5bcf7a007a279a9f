// doctor's outputs from its records: the verdict table with its note, and
// the Prometheus text (node_exporter's textfile collector).
#include <fmt/format.h>

#include <ctime>
#include <functional>

#include "family/doctor/doctor_family.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

std::string verdict_of(const Record& rec) {
  return rec.get_or(doctor_field::verdict, std::string("-"));
}

// Prometheus label value: backslash, quote and newline escaped.
std::string esc(const std::string& v) {
  std::string o;
  for (char c : v)
    o += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
  return o;
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

// One gauge family per figure, a sample per check with its labels; the
// verdict as a number (0 PASS, 1 WARN, 2 FAIL, -1 none) and as a label.
std::string doctor_prometheus(const Report& r) {
  const std::string common =
      fmt::format("backend=\"{}\",host=\"{}\"", esc(r.env.backend), esc(r.env.host));
  std::string out;
  const auto family = [&](const char* name, const char* help,
                          const std::function<double(const Record&)>& value, bool with_verdict) {
    out += fmt::format("# HELP xferbench_doctor_{} {}\n# TYPE xferbench_doctor_{} gauge\n", name,
                       help, name);
    for (const Record& rec : r.results)
      out += fmt::format("xferbench_doctor_{}{{check=\"{}\",where=\"{}\",unit=\"{}\",{}{}}} {}\n",
                         name, esc(rec.kase), esc(rec.method),
                         esc(rec.get_or(doctor_field::unit, std::string())), common,
                         with_verdict ? fmt::format(",verdict=\"{}\"", esc(verdict_of(rec))) : "",
                         value(rec));
  };
  family(
      "measured", "the measured figure of a check, in its unit",
      [](const Record& x) { return x.get_or(doctor_field::measured, 0.0); }, false);
  family(
      "expected", "what the link should give, in the check's unit; 0: no expected figure",
      [](const Record& x) { return x.get_or(doctor_field::expected, 0.0); }, false);
  family(
      "ratio", "measured / expected; 0: no expected figure",
      [](const Record& x) { return x.get_or(doctor_field::ratio, 0.0); }, false);
  family(
      "verdict", "0 PASS, 1 WARN, 2 FAIL, -1 nothing to hold it against",
      [](const Record& x) {
        const std::string v = verdict_of(x);
        return v == "PASS" ? 0.0 : v == "WARN" ? 1.0 : v == "FAIL" ? 2.0 : -1.0;
      },
      true);
  int fails = 0;
  for (const Record& rec : r.results) fails += rec.status == Status::failed;
  out += fmt::format(
      "# HELP xferbench_doctor_failed_checks checks with the verdict FAIL\n"
      "# TYPE xferbench_doctor_failed_checks gauge\n"
      "xferbench_doctor_failed_checks{{{}}} {}\n"
      "# HELP xferbench_doctor_run_timestamp_seconds when this doctor run ended (Unix time)\n"
      "# TYPE xferbench_doctor_run_timestamp_seconds gauge\n"
      "xferbench_doctor_run_timestamp_seconds{{{}}} {}\n",
      common, fails, common, static_cast<long long>(std::time(nullptr)));
  return out;
}

}  // namespace xb
