#pragma once
// `xferbench coll`: collectives with nccl-tests' conventions.
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_coll_family();
// nccl-tests' table, one per collective.
std::string coll_tables(const Report& r);

}  // namespace xb
