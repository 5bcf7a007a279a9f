#pragma once
// Shared pieces of the table reporter, one file per benchmark family.
#include <map>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace xb {

std::string table_header(const Report& r);
// Summary lines (crossover, ...) and the ok/waived/failed count.
std::string table_footer(const Report& r);
std::string remote_tables(const Report& r);
std::string coll_tables(const Report& r);
std::string engine_tables(const Report& r);
std::string gemm_tables(const Report& r);
std::string field_text(const FieldValue& v);
const FieldValue* find_field(const std::vector<Field>& fields, const std::string& key);
// Records grouped by case, cases in the order they first appear.
struct CaseGroups {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Record*>> by_case;
};
CaseGroups group_by_case(const Report& r);

// A numeric family field of a record, or `missing` when absent or not a number.
double field_number(const Record& r, const std::string& key, double missing = -1);

}  // namespace xb
