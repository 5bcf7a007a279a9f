#pragma once
// `xferbench latency`: pointer-chase latency between devices' memory and
// cores (on the host: NUMA node to NUMA node), and the ping-pong between
// two ranks, with percentiles.
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_latency_family();
// The chase table (one row per memory and chaser, ns) and the ping-pong
// table (one row per size, one-way us).
std::string latency_tables(const Report& r);

}  // namespace xb
