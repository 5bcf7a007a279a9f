#pragma once
// `xferbench doctor`: one command that measures every path of the machine,
// holds each figure against what its link should give, and names what is wrong.
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_doctor_family();

}  // namespace xb
