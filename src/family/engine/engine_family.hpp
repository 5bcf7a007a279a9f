#pragma once
// `xferbench engine serve|client|selftest`: the UCX transfer engine.
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_engine_family();
// One table per (op, method): per block size, GB/s and latency percentiles.
std::string engine_tables(const Report& r);
// How engine and kv figures are counted (the line under the table header).
std::string engine_note();

}  // namespace xb
