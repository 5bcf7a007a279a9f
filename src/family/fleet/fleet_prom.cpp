// fleet --format prom: a sample per verdict row, labelled by what it names.
// A host is `nodename` (node_exporter's node_uname_info spells a host so),
// a link its two ends `src_host` and `dst_host` (the names fleet's pair
// records use), a row of a rail its `rail`; the figures and verdicts are
// doctor's metrics under xferbench_fleet_ (add_verdict_samples).
#include "family/fleet/fleet_prom.hpp"

#include "family/doctor/doctor_family.hpp"
#include "family/doctor/verdict_prom.hpp"
#include "family/fleet/fleet_rails.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

// A name without its rail ("vm3 rail 1 (xb1)" -> "vm3"); the rail and its
// NIC go to `rail` and `nic` once.
std::string off_rail(const std::string& name, std::string& rail, std::string& nic) {
  const auto r = parse_rail_label(name);
  if (!r) return name;
  rail = std::to_string(r->rail);
  nic = r->nic;
  return r->host;
}

// Where a verdict row is: "all" (the fleet), a member ("node3", "node3#2"),
// a link ("node1<->node2"); with --rails each on a rail ("node3 rail 1
// (mlx5_1:1)", the fleet's own rows "rail 1 (mlx5_1:1)").
PromLabels fleet_labels(const Record& rec) {
  PromLabels labels{{"check", rec.kase}};
  const std::string& where = rec.method;
  std::string rail, nic;
  if (const auto at = where.find("<->"); at != std::string::npos) {
    labels.emplace_back("src_host", off_rail(where.substr(0, at), rail, nic));
    labels.emplace_back("dst_host", off_rail(where.substr(at + 3), rail, nic));
  } else if (rec.kase != "fleet" && where != "all" && where != "-") {
    labels.emplace_back("nodename", off_rail(where, rail, nic));
  } else {
    off_rail(where.size() > 6 && where.compare(where.size() - 6, 6, " hosts") == 0
                 ? where.substr(0, where.size() - 6)
                 : where,
             rail, nic);
  }
  if (const FieldValue* r = find_field(rec.extra, "rail"); r && rail.empty()) rail = field_text(*r);
  if (!rail.empty()) labels.emplace_back("rail", rail);
  if (!nic.empty()) labels.emplace_back("nic", nic);
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
