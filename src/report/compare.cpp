#include "report/compare.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "report/report.hpp"

namespace xb {
namespace {

using json = nlohmann::json;

// Names renamed within schema xferbench/1, read under today's names so old
// files still match new ones: gemm-ar's MPI baseline became the library
// baseline (MPI on the host, NCCL on cuda), its method the library's name.
void upgrade(json& doc) {
  if (doc.value("command", "") != "gemm-ar") return;
  for (auto& r : doc["results"]) {
    if (!r.is_object()) continue;
    if (r.value("case", "") == "mpi_allreduce") {
      r["case"] = "library_allreduce";
      r["method"] = "mpi";
    }
    if (r.contains("mpi_allreduce_us")) {
      r["library_allreduce_us"] = r["mpi_allreduce_us"];
      r.erase("mpi_allreduce_us");
    }
  }
}

// Every field the readers use has the type they read it as, so that a
// hand-edited or foreign file is one UsageError, never a JSON type error.
void check_shape(const json& doc, const std::string& name) {
  const auto bad = [&](const std::string& what) {
    return UsageError(fmt::format("{} is not a valid xferbench result: {}", name, what));
  };
  if (doc.contains("command") && !doc["command"].is_string()) throw bad("\"command\" is not a string");
  std::size_t i = 0;
  for (const auto& r : doc["results"]) {
    const std::string at = fmt::format("results[{}]", i++);
    if (!r.is_object()) throw bad(at + " is not an object");
    if (!r.contains("case") || !r["case"].is_string()) throw bad(at + " has no \"case\" string");
    for (const char* k : {"method", "status", "reason"})
      if (r.contains(k) && !r[k].is_string()) throw bad(fmt::format("{}.{} is not a string", at, k));
    for (const char* k : {"src", "dst"})
      if (r.contains(k) && !r[k].is_number_integer())
        throw bad(fmt::format("{}.{} is not an integer", at, k));
    if (r.contains("bytes") && !r["bytes"].is_number_unsigned())
      throw bad(at + ".bytes is not a non-negative integer");
    for (const char* k : {"gbps", "time_us"}) {
      if (!r.contains(k)) continue;
      if (!r[k].is_object()) throw bad(fmt::format("{}.{} is not an object", at, k));
      for (const auto& [field, v] : r[k].items())
        if (!v.is_number()) throw bad(fmt::format("{}.{}.{} is not a number", at, k, field));
    }
  }
}

json parse(const std::string& text, const std::string& name) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception&) {
    throw UsageError(fmt::format("{} is not a JSON document", name));
  }
  if (!doc.is_object() || !doc.contains("schema"))
    throw UsageError(fmt::format("{} is not an xferbench result (no \"schema\")", name));
  if (doc["schema"] != kSchema)
    throw UsageError(fmt::format("{} has schema {} but this xferbench reads {}", name,
                                 doc["schema"].dump(), kSchema));
  if (!doc.contains("results") || !doc["results"].is_array() || doc["results"].empty())
    throw UsageError(fmt::format("{} has no results", name));
  check_shape(doc, name);
  upgrade(doc);
  return doc;
}

json load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

// The identity of a record: the common fields and the family's key fields.
std::string key_of(const std::string& command, const RecordSchema* schema, const json& r) {
  std::string k =
      fmt::format("{} {} {} {}->{} {}", command, r.value("case", "?"), r.value("method", "?"),
                  r.value("src", -1), r.value("dst", -1), r.value("bytes", 0ULL));
  if (!schema) return k;
  for (const auto& f : schema->keys())
    if (r.contains(f))
      k += fmt::format(" {}={}", f, r[f].is_string() ? r[f].get<std::string>() : r[f].dump());
  return k;
}

// The family's headline metric: a field (coll's busbw), else median GB/s.
std::pair<std::string, double> metric_of(const RecordSchema* schema, const json& r) {
  const std::string name = schema ? schema->headline_name() : std::string(RecordSchema::kGbps);
  if (name != RecordSchema::kGbps)
    return {name, r.contains(name) && r[name].is_number() ? r[name].get<double>() : 0.0};
  return {name, r.contains("gbps") ? r["gbps"].value("median", 0.0) : 0.0};
}

}  // namespace

std::string load_result_text(const std::string& path) { return load(path).dump(); }

std::string parse_result_text(const std::string& text, const std::string& name) {
  return parse(text, name).dump();
}

double parse_threshold(const std::string& text) {
  std::string t = text;
  const bool pct = !t.empty() && t.back() == '%';
  if (pct) t.pop_back();
  double v = -1;
  try {
    std::size_t used = 0;
    v = std::stod(t, &used);
    if (used != t.size()) v = -1;
  } catch (const std::exception&) {
    v = -1;
  }
  if (pct) v /= 100;
  if (!(v >= 0 && v < 1))
    throw UsageError(fmt::format("--threshold '{}' must be like 5% or 0.05 (below 100%)", text));
  return v;
}

Comparison compare_results(const std::string& old_path, const std::string& new_path,
                           double threshold, const SchemaLookup& schema_of) {
  const json a = load(old_path), b = load(new_path);
  if (a.value("command", "") != b.value("command", ""))
    throw UsageError(fmt::format("{} is from `{}`, {} from `{}`: nothing to compare", old_path,
                                 a.value("command", "?"), new_path, b.value("command", "?")));
  const std::string cmd = a.value("command", "");
  const RecordSchema* schema = schema_of ? schema_of(cmd) : nullptr;
  std::map<std::string, const json*> old_by_key;
  for (const auto& r : a["results"])
    if (r.value("status", "") == "ok") old_by_key[key_of(cmd, schema, r)] = &r;
  Comparison c;
  std::map<std::string, bool> seen;
  for (const auto& r : b["results"]) {
    if (r.value("status", "") != "ok") continue;
    const std::string k = key_of(cmd, schema, r);
    auto it = old_by_key.find(k);
    if (it == old_by_key.end()) {
      c.only_new.push_back(k);
      continue;
    }
    seen[k] = true;
    const auto [name, nv] = metric_of(schema, r);
    const double ov = metric_of(schema, *it->second).second;
    CompareRow row{k, name, ov, nv, ov > 0 ? nv / ov : 0, false};
    row.regression = ov > 0 && nv < ov * (1 - threshold);
    c.regressions += row.regression ? 1 : 0;
    c.rows.push_back(row);
  }
  for (const auto& [k, r] : old_by_key)
    if (!seen.count(k)) c.only_old.push_back(k);
  return c;
}

std::string format_comparison(const Comparison& c, double threshold) {
  std::string out =
      fmt::format("{:<64} {:>6} {:>10} {:>10} {:>7}\n", "record", "metric", "old", "new", "ratio");
  for (const auto& r : c.rows)
    out += fmt::format("{:<64} {:>6} {:>10.3f} {:>10.3f} {:>7.3f}{}\n", r.key, r.metric,
                       r.old_value, r.new_value, r.ratio, r.regression ? "  REGRESSION" : "");
  for (const auto& k : c.only_old) out += fmt::format("only in the old file: {}\n", k);
  for (const auto& k : c.only_new) out += fmt::format("only in the new file: {}\n", k);
  out += fmt::format("{} matched, {} regression{} past {:.1f}%, {} unmatched\n", c.rows.size(),
                     c.regressions, c.regressions == 1 ? "" : "s", threshold * 100,
                     c.only_old.size() + c.only_new.size());
  return out;
}

}  // namespace xb
