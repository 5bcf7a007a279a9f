#include <xferbench/version.hpp>

#include "report/json_common.hpp"
#include "report/report.hpp"

namespace xb {

ojson field_json(const FieldValue& v) {
  return std::visit([](const auto& x) { return ojson(x); }, v);
}

ojson document_head(const std::string& command, const EnvInfo& env) {
  ojson doc;
  doc["schema"] = kSchema;
  doc["tool"] = {{"version", kVersion}, {"git", kGitDescribe}};
  ojson devs = ojson::array();
  for (const auto& d : env.devices)
    devs.push_back({{"id", d.id}, {"name", d.name}, {"numa", d.numa}});
  doc["env"] = {{"host", env.host},       {"cpu", env.cpu},  {"cores", env.cores},
                {"backend", env.backend}, {"devices", devs}, {"ranks", env.ranks}};
  if (!env.backend_note.empty()) doc["env"]["backend_note"] = env.backend_note;
  if (!env.software.empty()) {
    ojson sw = ojson::object();
    for (const auto& [name, version] : env.software) sw[name] = version;
    doc["env"]["software"] = sw;
  }
  doc["command"] = command;
  return doc;
}

ojson record_json(const Record& r) {
  ojson j;
  j["case"] = r.kase;
  j["method"] = r.method;
  j["src"] = r.src;
  j["dst"] = r.dst;
  j["bytes"] = r.bytes;
  j["iters"] = r.iters;
  j["status"] = to_string(r.status);
  j["reason"] = r.reason;
  j["verified"] = r.verified ? ojson(*r.verified) : ojson(nullptr);
  const Stats& t = r.time_us;
  j["time_us"] = {{"min", t.min}, {"median", t.median}, {"mean", t.mean},
                  {"max", t.max}, {"p99", t.p99},       {"cv", t.cv}};
  j["gbps"] = {{"median", r.gbps_median}, {"max", r.gbps_max}};
  for (const auto& [k, v] : r.extra) j[k] = field_json(v);
  return j;
}

namespace {

ojson params_json(const Params& p) {
  ojson out = ojson::object();
  for (const auto& [k, v] : p) out[k] = field_json(v);
  return out;
}

}  // namespace

std::string format_json(const Report& r) {
  ojson doc = document_head(r.command, r.env);
  doc["params"] = params_json(r.params);
  ojson results = ojson::array();
  for (const auto& rec : r.results) results.push_back(record_json(rec));
  doc["results"] = results;
  if (!r.summary.empty()) doc["summary"] = params_json(r.summary);
  return doc.dump(2) + "\n";
}

std::string jsonl_head(const Report& r) {
  ojson doc = document_head(r.command, r.env);
  doc["format"] = "jsonl";
  doc["params"] = params_json(r.params);
  return doc.dump() + "\n";
}

std::string jsonl_record(const Record& r) { return record_json(r).dump() + "\n"; }

std::string jsonl_summary(const Report& r) {
  return ojson{{"summary", params_json(r.summary)}}.dump() + "\n";
}

std::string format_jsonl(const Report& r) {
  std::string out = jsonl_head(r);
  for (const auto& rec : r.results) out += jsonl_record(rec);
  return out + jsonl_summary(r);
}

}  // namespace xb
