#pragma once
// `xferbench remote`: one rank gets/puts a peer rank's window.
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_remote_family();
// The table of pto-isa's TGET example, one per op: per size, each method side by side.
std::string remote_tables(const Report& r);

}  // namespace xb
