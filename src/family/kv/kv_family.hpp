#pragma once
// `xferbench kv`: KV-cache block put/get among ranks over the UCX engine.
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_kv_family();
// Per block count: each rank's get, rank 0's put, and the get_avg/get_max rows.
std::string kv_tables(const Report& r);

}  // namespace xb
