#pragma once
// The pieces every family's table is made of: the header line, the footer
// (summary lines and ok/waived/failed counts), and helpers to read fields.
#include <map>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace xb {

// "xferbench copy · backend host · 1 device · host (cpu, N cores)".
std::string table_header(const Report& r);
// Summary lines (crossover, ...) and the ok/waived/failed count.
std::string table_footer(const Report& r);
// With --check every: the iterations checked and wrong over the records, and
// the rate a clean record bounds ("" when no record was checked every iteration).
std::string check_every_line(const std::vector<Record>& results);

std::string field_text(const FieldValue& v);
const FieldValue* find_field(const std::vector<Field>& fields, const std::string& key);
// A field's text for a table cell ("" when the record lacks it).
template <class T>
std::string field_text(const Record& r, FieldKey<T> key) {
  const auto v = r.get(key);
  return v ? field_text(FieldValue(*v)) : std::string();
}

// Records grouped by case, cases in the order they first appear.
struct CaseGroups {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Record*>> by_case;
};
CaseGroups group_by_case(const Report& r);

}  // namespace xb
