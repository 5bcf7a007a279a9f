#include "family/family.hpp"

#include <fmt/format.h>

#include <map>
#include <string>
#include <tuple>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

// A monitoring run: one compact line per measurement and cycle, the
// family's headline figure with its lowest and highest so far.
std::string cycle_lines(const Family& f, const Report& r) {
  const RecordSchema& schema = f.schema();
  std::string out = fmt::format(
      "\n{:>6} {:>9}  {:<40} {:>10} {:>10} {:>10}\n", "cycle", "t (s)", "measurement",
      schema.headline_name() == RecordSchema::kGbps ? std::string("GB/s") : schema.headline_name(),
      "min", "max");
  double t0 = -1;
  for (const Record& x : r.results)
    if (const double t = x.get_or(kTUnix, -1.0); t >= 0 && (t0 < 0 || t < t0)) t0 = t;
  std::map<std::string, std::pair<double, double>> seen;  // measurement -> min, max so far
  for (const Record& x : r.results) {
    std::string what =
        fmt::format("{} {} {}->{} {}", x.kase, x.method, x.src, x.dst, format_size(x.bytes));
    for (const auto& k : schema.keys())
      for (const auto& [name, v] : x.extra)
        if (name == k) what += " " + field_text(v);
    const std::string cycle = field_text(FieldValue{x.get_or(kCycle, std::int64_t{0})});
    if (x.status != Status::ok) {
      out += fmt::format("{:>6} {:>9.1f}  {:<40} {:>10}\n", cycle, x.get_or(kTUnix, t0) - t0, what,
                         to_string(x.status));
      continue;
    }
    const double v = schema.headline_value(x);
    auto [it, fresh] = seen.try_emplace(what, v, v);
    it->second.first = std::min(it->second.first, v);
    it->second.second = std::max(it->second.second, v);
    out += fmt::format("{:>6} {:>9.1f}  {:<40} {:>10.2f} {:>10.2f} {:>10.2f}\n", cycle,
                       x.get_or(kTUnix, t0) - t0, what, v, it->second.first, it->second.second);
  }
  return out;
}

bool monitored(const Report& r) {
  for (const Record& x : r.results)
    if (x.get_or(kCycle, std::int64_t{-1}) >= 0) return true;
  return false;
}

}  // namespace

Support Family::fits(Backend&, Runtime*) const { return Support::yes(); }

std::string Family::table_note(const Report& /*r*/) const {
  return "GB/s = bytes moved once / time, decimal (1e9 B/s); time per copy in us, median of the "
         "timed iterations\n";
}

std::string render_table(const Family& f, const Report& r) {
  return table_header(r) + f.table_note(r) + (monitored(r) ? cycle_lines(f, r) : f.tables(r)) +
         table_footer(r);
}

std::string render(const Family& f, const Report& r, Format fmt) {
  if (fmt == Format::prom) return f.prometheus(r);
  return fmt == Format::table ? render_table(f, r) : format_report(r, fmt);
}

std::string Family::prometheus(const Report&) const {
  throw UsageError("--format prom is doctor's and fleet's (health checks for Prometheus); " +
                   name() + " writes table, json, csv or jsonl");
}

Support host_memory_only(const Capabilities& c) {
  if (c.backend == "host") return Support::yes();
  return Support::no("moves host memory only in this version (not " + c.backend + ")");
}

const Family* find_family(const Families& all, const std::string& name) {
  for (const auto& f : all)
    if (f->name() == name) return f.get();
  return nullptr;
}

}  // namespace xb
