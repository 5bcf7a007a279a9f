#pragma once
// `xferbench ep`: MoE expert-parallel dispatch and combine.
#include <memory>
#include <string>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_ep_family();
// The figures' definitions (the line under the header) and the tables.
std::string ep_note(const Report& r);
std::string ep_tables(const Report& r);

}  // namespace xb
