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
  doc["command"] = command;
  return doc;
}

namespace {

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

}  // namespace

std::string format_json(const Report& r) {
  ojson doc = document_head(r.command, r.env);
  ojson params = ojson::object();
  for (const auto& [k, v] : r.params) params[k] = field_json(v);
  doc["params"] = params;
  ojson results = ojson::array();
  for (const auto& rec : r.results) results.push_back(record_json(rec));
  doc["results"] = results;
  if (!r.summary.empty()) {
    ojson summary = ojson::object();
    for (const auto& [k, v] : r.summary) summary[k] = field_json(v);
    doc["summary"] = summary;
  }
  return doc.dump(2) + "\n";
}

}  // namespace xb
