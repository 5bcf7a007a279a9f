#pragma once
// A doctor run: every check asked, step by step in the registry's order
// (doctor_context.hpp), the comparisons measured in rounds and judged, and
// the rows in the order of the checks.
#include <set>
#include <string>
#include <vector>

#include "family/doctor/doctor_context.hpp"

namespace xb::doctor {

struct Outcome {
  std::vector<Finding> findings;
  double reference = 0;  // host memcpy on all cores, GB/s
  CpuLoad load;          // around the main rounds
  int rounds = 0;        // the main rounds run
  Bytes d2d_size = 0;    // the d2d probes' size (d2d_bytes)
};

// `checks`: names from check_names(); the others are not run.
Outcome run(Backend& be, const Plan& plan, const std::set<std::string>& checks,
            const Progress& progress, EngineTarget target = {});

}  // namespace xb::doctor
