#pragma once
// `xferbench doctor`: one command that measures every path of the machine,
// holds each figure against what its link should give, and names what is wrong.
#include <memory>
#include <string>
#include <vector>

#include "core/sweep.hpp"
#include "family/doctor/doctor_checks.hpp"
#include "family/family.hpp"

namespace xb {

class Backend;

std::unique_ptr<Family> make_doctor_family();

// doctor's local checks at the --quick depth (copies of every device and
// direction, links, NUMA, devices and pairs; no ranks, no engine), for
// fleet's census: every host judges itself the way `doctor --quick` does.
std::vector<Finding> doctor_census(Backend& backend, const Progress& progress);

}  // namespace xb
