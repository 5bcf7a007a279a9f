#pragma once
// `xferbench fleet`'s census, pure: every host's doctor --quick findings
// held against the same check on the other hosts, one row per host; and
// the findings' wire form (JSON) between the ranks.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "family/doctor/doctor_checks.hpp"

namespace xb {

nlohmann::json finding_json(const Finding& f);
Verdict verdict_of(const std::string& v);  // "PASS", "WARN", "FAIL"; else none
// Rank 0: one census row per host (see fleet_census.cpp).
std::vector<Finding> census_rows(const std::vector<std::string>& hosts,
                                 const std::vector<std::vector<Finding>>& per_host, Grade g);

}  // namespace xb
