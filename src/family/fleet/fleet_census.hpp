#pragma once
// `xferbench fleet`'s census, pure: every host's doctor --quick findings
// held against the same check on the other hosts, one row per host; and
// the findings' wire form (JSON) between the ranks.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "family/doctor/doctor_checks.hpp"

namespace xb {

nlohmann::json finding_json(const Finding& f);
Verdict verdict_of(const std::string& v);  // "PASS", "WARN", "FAIL"; else none
// A host's census, as its findings' JSON: `broken` (a backend whose
// hardware is there but fails) as a FAIL finding, then doctor --quick on a
// backend of its own named `backend`, on a thread of its own. A census that
// fails is a FAIL finding with the error; one that does not finish within
// `deadline_s` (a device or library call stopped answering) is a FAIL
// finding saying so, and the process is marked as a hung device's is
// (backend/common/device_wait.hpp): the census thread is left behind, and
// the process ends without the vendor runtimes' teardown.
std::string host_census(const std::string& backend, const std::string& broken, double deadline_s);

// Rank 0: one census row per host (see fleet_census.cpp).
std::vector<Finding> census_rows(const std::vector<std::string>& hosts,
                                 const std::vector<std::vector<Finding>>& per_host, Grade g);

}  // namespace xb
