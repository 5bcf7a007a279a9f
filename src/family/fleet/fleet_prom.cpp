// fleet --format prom: a sample per verdict row, labelled by what it names.
// A host is `nodename` (node_exporter's node_uname_info spells a host so),
// a link its two ends `src_host` and `dst_host` (the names fleet's pair
// records use), a row of a rail its `rail`; the figures and verdicts are
// doctor's metrics under xferbench_fleet_ (add_verdict_samples).
#include "family/fleet/fleet_prom.hpp"

#include "family/doctor/doctor_family.hpp"
#include "family/doctor/verdict_prom.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

// Where a verdict row is: "all" (the fleet), a member ("node3", "node3#2"),
// a link ("node1<->node2").
PromLabels fleet_labels(const Record& rec) {
  PromLabels labels{{"check", rec.kase}};
  const std::string& where = rec.method;
  if (const auto at = where.find("<->"); at != std::string::npos) {
    labels.emplace_back("src_host", where.substr(0, at));
    labels.emplace_back("dst_host", where.substr(at + 3));
  } else if (rec.kase != "fleet" && where != "all" && where != "-") {
    labels.emplace_back("nodename", where);
  }
  if (const FieldValue* rail = find_field(rec.extra, "rail"))
    labels.emplace_back("rail", field_text(*rail));
  return labels;
}

}  // namespace

std::string fleet_prometheus(const Report& r) {
  PromText out;
  for (const Record& rec : r.results)
    if (rec.get(doctor_field::verdict)) add_verdict_samples(out, "fleet", rec, fleet_labels(rec));
  if (const FieldValue* v = find_field(r.summary, "failed_pairs");
      v && std::holds_alternative<std::int64_t>(*v))
    out.add(
        "xferbench_fleet_failed_pairs",
        "pairs of hosts with a failed transfer in the pair rounds (a FAIL of their link or host)",
        {}, static_cast<double>(std::get<std::int64_t>(*v)));
  add_run_samples(out, "fleet", r);
  return out.text();
}

}  // namespace xb
