#include "report/report.hpp"

#include "core/error.hpp"

namespace xb {

Format parse_format(const std::string& s) {
  if (s == "table") return Format::table;
  if (s == "json") return Format::json;
  if (s == "csv") return Format::csv;
  throw UsageError("--format must be table, json or csv (got '" + s + "')");
}

std::string format_report(const Report& r, Format f) {
  switch (f) {
    case Format::json:
      return format_json(r);
    case Format::csv:
      return format_csv(r);
    default:
      return format_table(r);
  }
}

int exit_code(const Report& r) {
  for (const auto& rec : r.results)
    if (rec.status == Status::failed) return 1;
  return 0;
}

}  // namespace xb
