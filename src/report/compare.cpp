#include "report/compare.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

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
  if (doc.contains("command") && !doc["command"].is_string())
    throw bad("\"command\" is not a string");
  std::size_t i = 0;
  for (const auto& r : doc["results"]) {
    const std::string at = fmt::format("results[{}]", i++);
    if (!r.is_object()) throw bad(at + " is not an object");
    if (!r.contains("case") || !r["case"].is_string()) throw bad(at + " has no \"case\" string");
    for (const char* k : {"method", "status", "reason"})
      if (r.contains(k) && !r[k].is_string())
        throw bad(fmt::format("{}.{} is not a string", at, k));
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

// --format jsonl: a head line, a line per record, a summary line. A last
// line cut short (a run killed while writing it) is left out.
json from_jsonl(const std::string& text, const std::string& name) {
  json doc;
  json results = json::array();
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  bool head = true;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {
      if (in.peek() == std::char_traits<char>::eof()) break;  // the last line, cut short
      throw UsageError(fmt::format("{} line {} is not a JSON object", name, n));
    }
    if (!j.is_object()) throw UsageError(fmt::format("{} line {} is not a JSON object", name, n));
    if (head) {
      doc = std::move(j);
      doc.erase("format");
      head = false;
    } else if (j.contains("summary") && j.size() == 1) {
      doc["summary"] = j["summary"];
    } else {
      results.push_back(std::move(j));
    }
  }
  doc["results"] = std::move(results);
  return doc;
}

// One CSV field list, with RFC 4180 quotes ("" inside quotes is a quote).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// A CSV cell as the JSON value it was written from.
json csv_value(const std::string& v) {
  if (v == "true") return true;
  if (v == "false") return false;
  try {
    std::size_t used = 0;
    if (v.find_first_of(".eE") == std::string::npos && !v.empty()) {
      const long long i = std::stoll(v, &used);
      if (used == v.size()) return i >= 0 ? json(static_cast<unsigned long long>(i)) : json(i);
    }
    const double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {
  }
  return v;
}

// --format csv: the records (no env or params in a CSV file).
json from_csv(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  const auto cols = csv_fields(line);
  json doc = {{"schema", kSchema}, {"env", json::object()}, {"params", json::object()}};
  json results = json::array();
  std::size_t n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto cells = csv_fields(line);
    if (cells.size() != cols.size())
      throw UsageError(fmt::format("{} line {} has {} fields, the header {}", name, n, cells.size(),
                                   cols.size()));
    json r = json::object();
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const std::string& c = cols[i];
      const std::string& v = cells[i];
      if (c == "command") {
        doc["command"] = v;
      } else if (c == "case" || c == "method" || c == "status" || c == "reason") {
        r[c] = v;
      } else if (c.rfind("time_us_", 0) == 0) {
        r["time_us"][c.substr(8)] = csv_value(v);
      } else if (c.rfind("gbps_", 0) == 0) {
        r["gbps"][c.substr(5)] = csv_value(v);
      } else if (c == "verified") {
        r[c] = v.empty() ? json(nullptr) : json(v == "true");
      } else if (!v.empty()) {
        r[c] = csv_value(v);
      }
    }
    results.push_back(std::move(r));
  }
  doc["results"] = std::move(results);
  return doc;
}

// A jsonl head line: an object saying "format": "jsonl", with no results
// of its own (a JSON document on one line is not one, whatever it holds).
bool is_jsonl_head(const std::string& line) {
  if (line.find("jsonl") == std::string::npos) return false;
  try {
    const json h = json::parse(line);
    return h.is_object() && h.contains("format") && h["format"] == "jsonl" &&
           !h.contains("results");
  } catch (const json::exception&) {
    return false;
  }
}

json parse(const std::string& text, const std::string& name) {
  json doc;
  const std::string first = text.substr(0, text.find('\n'));
  if (first.rfind("command,case,method,", 0) == 0) {
    try {
      doc = from_csv(text, name);
      (void)doc.dump();                   // a CSV cell is any bytes; the documents are UTF-8
    } catch (const json::exception& e) {  // columns that clash (a "gbps" and a "gbps_max"), ...
      throw UsageError(fmt::format("{} is not a valid xferbench CSV result ({})", name, e.what()));
    }
  } else if (is_jsonl_head(first)) {
    doc = from_jsonl(text, name);
  } else {
    try {
      doc = json::parse(text);
    } catch (const json::exception&) {
      throw UsageError(fmt::format("{} is not a JSON document", name));
    }
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

// A record with figures to compare: ok, or failed on wrong data with its
// times kept (--check every, or a verification that failed).
bool has_figures(const json& r) {
  const std::string st = r.value("status", "");
  if (st == "ok") return true;
  const bool wrong = r.contains("wrong_iters") ||
                     (r.contains("verified") && r["verified"].is_boolean() && !r["verified"]);
  return st == "failed" && wrong && r.contains("time_us") && r["time_us"].is_object() &&
         r["time_us"].value("median", 0.0) > 0;
}

// "26/2000" (--check every), "wrong" (a failed verification), "ok" where
// right; "" where it says nothing.
std::string wrong_text(const json& r) {
  const auto num = [&](const char* k) {
    return r.contains(k) && r[k].is_number_integer() ? r[k].get<std::int64_t>() : -1;
  };
  if (num("checked_iters") >= 0)
    return fmt::format("{}/{}", num("wrong_iters"), num("checked_iters"));
  if (r.contains("verified") && r["verified"].is_boolean()) return r["verified"] ? "ok" : "wrong";
  return "";
}

bool is_wrong(const json& r) {
  if (r.contains("wrong_iters") && r["wrong_iters"].is_number_integer())
    return r["wrong_iters"].get<std::int64_t>() > 0;
  return r.contains("verified") && r["verified"].is_boolean() && !r["verified"].get<bool>();
}

}  // namespace

std::string load_result_text(const std::string& path) { return load(path).dump(); }

bool is_jsonl_file(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  return is_jsonl_head(first);
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

// env.software of two documents, name by name (a name one of them lacks reads "-").
static std::vector<std::string> software_changes(const json& a, const json& b) {
  const auto software = [](const json& d) {
    std::map<std::string, std::string> out;
    if (d.contains("env") && d["env"].is_object() && d["env"].contains("software") &&
        d["env"]["software"].is_object())
      for (const auto& [k, v] : d["env"]["software"].items())
        out[k] = v.is_string() ? v.get<std::string>() : v.dump();
    return out;
  };
  const auto sa = software(a), sb = software(b);
  std::map<std::string, bool> names;
  for (const auto& [k, v] : sa) names[k] = true;
  for (const auto& [k, v] : sb) names[k] = true;
  std::vector<std::string> out;
  for (const auto& [k, unused] : names) {
    const auto ia = sa.find(k), ib = sb.find(k);
    const std::string va = ia == sa.end() ? "-" : ia->second,
                      vb = ib == sb.end() ? "-" : ib->second;
    if (va != vb) out.push_back(fmt::format("{}: {} -> {}", k, va, vb));
  }
  return out;
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
    if (has_figures(r)) old_by_key[key_of(cmd, schema, r)] = &r;
  Comparison c;
  std::map<std::string, bool> seen;
  for (const auto& r : b["results"]) {
    if (!has_figures(r)) continue;
    const std::string k = key_of(cmd, schema, r);
    auto it = old_by_key.find(k);
    if (it == old_by_key.end()) {
      c.only_new.push_back(k);
      continue;
    }
    seen[k] = true;
    const auto [name, nv] = metric_of(schema, r);
    const double ov = metric_of(schema, *it->second).second;
    // A monitoring file: each cycle against the baseline, each its own row.
    const std::string label = r.contains("cycle") && r["cycle"].is_number()
                                  ? fmt::format("{} cycle={}", k, r["cycle"].dump())
                                  : k;
    CompareRow row{label, name, ov, nv, ov > 0 ? nv / ov : 0, false, "", false};
    row.regression = ov > 0 && nv < ov * (1 - threshold);
    const bool was = is_wrong(*it->second), now = is_wrong(r);
    row.wrong_data = now && !was;  // wrong in both: shown, not new
    if (was || now)
      row.wrong = fmt::format("{} {} -> {}{}", row.wrong_data ? "WRONG DATA" : "wrong data",
                              wrong_text(*it->second), wrong_text(r),
                              row.wrong_data ? ""
                              : now          ? " (as before)"
                                             : " (now right)");
    c.regressions += row.regression || row.wrong_data ? 1 : 0;
    c.rows.push_back(row);
  }
  for (const auto& [k, r] : old_by_key)
    if (!seen.count(k)) c.only_old.push_back(k);
  c.software_changed = software_changes(a, b);
  return c;
}

std::string format_comparison(const Comparison& c, double threshold) {
  std::string out;
  for (const auto& s : c.software_changed) out += fmt::format("software differs: {}\n", s);
  out +=
      fmt::format("{:<64} {:>6} {:>10} {:>10} {:>7}\n", "record", "metric", "old", "new", "ratio");
  for (const auto& r : c.rows)
    out += fmt::format("{:<64} {:>6} {:>10.3f} {:>10.3f} {:>7.3f}{}{}\n", r.key, r.metric,
                       r.old_value, r.new_value, r.ratio, r.regression ? "  REGRESSION" : "",
                       r.wrong.empty() ? "" : "  " + r.wrong);
  for (const auto& k : c.only_old) out += fmt::format("only in the old file: {}\n", k);
  for (const auto& k : c.only_new) out += fmt::format("only in the new file: {}\n", k);
  out += fmt::format("{} matched, {} regression{} past {:.1f}%, {} unmatched\n", c.rows.size(),
                     c.regressions, c.regressions == 1 ? "" : "s", threshold * 100,
                     c.only_old.size() + c.only_new.size());
  return out;
}

}  // namespace xb
