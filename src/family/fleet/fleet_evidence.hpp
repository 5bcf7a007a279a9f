#pragma once
// The NIC error counters that grew during the pairs (core/nic_counters.hpp),
// as evidence in fleet's host and link rows: "error counters during the
// pair: vm3 mlx5_0:1 symbol_error +412".
#include <string>
#include <vector>

#include "family/fleet/fleet_judge.hpp"

namespace xb {

// Appends to each host and link finding of `j` (where: `names`, "A" or
// "A<->B") the error counters that grew on its NICs in `figures`' steps:
// a host's own side of each of its pairs, both sides of a link; and a
// "rail" WARN row for each host whose rail's bytes went through another NIC
// (the first such warning of its pairs). Pure.
void add_counter_evidence(FleetJudgement& j, const std::vector<std::string>& names,
                          const std::vector<PairFigures>& figures);

}  // namespace xb
