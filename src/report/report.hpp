#pragma once
// Reporters: Records -> table (fmt) | JSON (nlohmann) | CSV. They only
// format; nothing here measures or decides.
#include <string>
#include <vector>

#include "core/record.hpp"
#include "core/topology.hpp"

namespace xb {

enum class Format { table, json, csv };
// "table", "json", "csv"; throws UsageError otherwise.
Format parse_format(const std::string& s);

inline constexpr const char* kSchema = "xferbench/1";

struct Report {
  std::string command;
  EnvInfo env;
  Params params;
  std::vector<Record> results;
  Params summary;  // run-level conclusions (crossover, counter rate); may be empty
};

// JSON or CSV. The table is the family's (family/family.hpp: render).
std::string format_report(const Report& r, Format f);
std::string format_json(const Report& r);
std::string format_csv(const Report& r);

std::string format_topo(const TopoView& t, const EnvInfo& env, Format f);
std::string format_list(const ListView& l, const EnvInfo& env, Format f);

// Exit status a report implies: 1 when any record failed, else 0.
int exit_code(const Report& r);

}  // namespace xb
