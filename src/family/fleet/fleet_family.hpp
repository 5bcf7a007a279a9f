#pragma once
// `xferbench fleet`: one rank per host; a census of every host, every pair
// of hosts measured in rounds of disjoint pairs, and the slow host, link or
// direction named (fleet_judge.hpp has the rules).
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_fleet_family();

}  // namespace xb
