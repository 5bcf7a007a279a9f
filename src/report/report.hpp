#pragma once
// Reporters: Records -> JSON, jsonl (nlohmann) or CSV; the table and prom
// are the family's (family/family.hpp). They only format; nothing here
// measures or decides.
#include <array>
#include <string>
#include <vector>

#include "core/record.hpp"
#include "core/schema.hpp"
#include "core/topology.hpp"

namespace xb {

// jsonl: a head line (schema, env, command, params, "format": "jsonl"), one
// line per record, then {"summary": {...}}; written as the records finish.
// prom: the Prometheus text exposition format (doctor only: its family renders it).
enum class Format { table, json, csv, jsonl, prom };
// "table", "json", "csv", "jsonl", "prom"; throws UsageError otherwise.
Format parse_format(const std::string& s);

inline constexpr const char* kSchema = "xferbench/1";

struct Report {
  std::string command;
  EnvInfo env;
  Params params;
  std::vector<Record> results;
  Params summary;  // run-level conclusions (crossover, counter rate); may be empty
};

// JSON, CSV or jsonl. The table and prom are the family's (family/family.hpp: render).
std::string format_report(const Report& r, Format f);
std::string format_json(const Report& r);
std::string format_csv(const Report& r);
std::string format_jsonl(const Report& r);
// The three parts of a jsonl document, for writing it as a run goes.
std::string jsonl_head(const Report& r);
std::string jsonl_record(const Record& r);
std::string jsonl_summary(const Report& r);

// The fields every record has before its family's, in the order the JSON
// writer puts them (a unit test holds the two together).
inline constexpr std::array<const char*, 11> kCommonFields = {
    "case",   "method", "src",      "dst",     "bytes", "iters",
    "status", "reason", "verified", "time_us", "gbps"};

// `xferbench <family> --fields`: each field of the family's records with its
// type, role and meaning, and the headline metric.
std::string format_fields(const RecordSchema& s);

std::string format_topo(const TopoView& t, const EnvInfo& env, Format f);
std::string format_list(const ListView& l, const EnvInfo& env, Format f);

// Exit status a report implies: 1 when any record failed, else 0.
int exit_code(const Report& r);

}  // namespace xb
