#pragma once
#include "core/topology.hpp"

namespace xb {

// Reads the local machine through hwloc. Throws RuntimeError on failure.
Topology read_host_topology();

}  // namespace xb
