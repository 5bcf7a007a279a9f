#include "family/fleet/fleet_census.hpp"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "family/doctor/doctor_family.hpp"

namespace xb {
namespace {

int severity(Verdict v) {
  return v == Verdict::fail ? 3 : v == Verdict::warn ? 2 : v == Verdict::pass ? 1 : 0;
}

}  // namespace

nlohmann::json finding_json(const Finding& f) {
  return {{"check", f.check},
          {"where", f.where},
          {"verdict", to_string(f.verdict)},
          {"measured", f.measured},
          {"expected", f.expected},
          {"unit", f.unit},
          {"why", f.why}};
}

Verdict verdict_of(const std::string& v) {
  return v == "PASS"   ? Verdict::pass
         : v == "WARN" ? Verdict::warn
         : v == "FAIL" ? Verdict::fail
                       : Verdict::none;
}

// Rank 0: one census row per host. A host's own doctor verdict stands (it
// was measured in paired rounds and a FAIL reproduced); each figure is also
// held against the same check on the other hosts (the median), at most a
// WARN: one measurement per host, not paired rounds across hosts.
std::vector<Finding> census_rows(const std::vector<std::string>& hosts,
                                 const std::vector<std::vector<Finding>>& per_host, Grade g) {
  std::map<std::string, std::vector<double>> figures;  // "check where" -> per host
  for (const auto& fs : per_host)
    for (const auto& f : fs)
      if (f.unit == "GB/s" && f.measured > 0)
        figures[f.check + " " + f.where].push_back(f.measured);
  std::vector<Finding> rows;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    Finding worst{"census", hosts[h], Verdict::pass, 0, 0, "", ""};
    int checks = 0;
    for (const auto& f : per_host[h]) {
      ++checks;
      Verdict v = f.verdict == Verdict::none ? Verdict::pass : f.verdict;
      std::string why = f.why;
      double measured = f.measured, expected = f.expected;
      const auto it = figures.find(f.check + " " + f.where);
      if (it != figures.end() && it->second.size() >= 2 && hosts.size() >= 2) {
        const double ref = peer_reference(it->second);
        const Verdict across = grade(ref > 0 ? f.measured / ref : 1, g.warn_below, g.fail_below);
        if (across != Verdict::pass && severity(Verdict::warn) > severity(v)) {
          v = Verdict::warn;
          expected = ref;
          why = fmt::format("{:.2f} of the same check on the other hosts ({:.3g} GB/s)",
                            f.measured / ref, ref);
        }
      }
      if (severity(v) > severity(worst.verdict)) {
        worst.verdict = v;
        worst.measured = measured;
        worst.expected = expected;
        worst.unit = f.unit;
        worst.why = fmt::format("{} {}: {}", f.check, f.where, why);
      }
    }
    if (worst.verdict == Verdict::pass) {
      worst.measured = checks;
      worst.unit = "checks";
      worst.why = fmt::format("{} local checks pass, none below the other hosts", checks);
    }
    if (checks == 0) {
      worst.verdict = Verdict::none;
      worst.why = "no local check ran";
    }
    rows.push_back(worst);
  }
  return rows;
}

}  // namespace xb
