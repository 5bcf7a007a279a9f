#pragma once
// `xferbench kv`: KV-cache block put/get among ranks over the UCX engine.
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_kv_family();
// Per block count: each rank's get, rank 0's put, and the get_avg/get_max rows.
// With --model: a row per (isl, burst, op) of the handoff.
std::string kv_tables(const Report& r);
// --model: how the handoff's figures are counted (the line under the header).
std::string kv_handoff_note();

}  // namespace xb
