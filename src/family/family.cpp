#include "family/family.hpp"

#include "core/error.hpp"

#include "report/table_kit.hpp"

namespace xb {

Support Family::fits(Backend&, Runtime*) const { return Support::yes(); }

std::string Family::table_note(const Report& /*r*/) const {
  return "GB/s = bytes moved once / time, decimal (1e9 B/s); time per copy in us, median of the "
         "timed iterations\n";
}

std::string render_table(const Family& f, const Report& r) {
  return table_header(r) + f.table_note(r) + f.tables(r) + table_footer(r);
}

std::string render(const Family& f, const Report& r, Format fmt) {
  if (fmt == Format::prom) return f.prometheus(r);
  return fmt == Format::table ? render_table(f, r) : format_report(r, fmt);
}

std::string Family::prometheus(const Report&) const {
  throw UsageError("--format prom is doctor's (health checks for Prometheus); " + name() +
                   " writes table, json, csv or jsonl");
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
