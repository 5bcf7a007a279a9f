#pragma once
// doctor --ranks N: remote get and an allreduce across N ranks of this host.
#include <string>
#include <vector>

#include "family/doctor/doctor_checks.hpp"

namespace xb::doctor {

// A row per size and run: remote get (held against `reference`, the host
// memcpy, on the host backend) and allreduce busbw (for reference); a run
// that fails or does not start is a FAIL row.
std::vector<Finding> cross_rank(int ranks, const std::string& backend, double reference);

}  // namespace xb::doctor
