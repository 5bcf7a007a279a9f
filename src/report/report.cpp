#include "report/report.hpp"

#include <stdexcept>

#include "core/error.hpp"

namespace xb {

Format parse_format(const std::string& s) {
  if (s == "table") return Format::table;
  if (s == "json") return Format::json;
  if (s == "csv") return Format::csv;
  if (s == "jsonl") return Format::jsonl;
  if (s == "prom") return Format::prom;
  throw UsageError("--format must be table, json, csv, jsonl or prom (got '" + s + "')");
}

std::string format_report(const Report& r, Format f) {
  switch (f) {
    case Format::json:
      return format_json(r);
    case Format::csv:
      return format_csv(r);
    case Format::jsonl:
      return format_jsonl(r);
    case Format::table:
    case Format::prom:
      break;
  }
  throw std::logic_error("format_report: the table and prom are rendered by the record's family");
}

int exit_code(const Report& r) {
  for (const auto& rec : r.results)
    if (rec.status == Status::failed) return 1;
  return 0;
}

}  // namespace xb
