// hwloc: loading, CPU lists, NUMA distances.
#include "backend/common/hwloc_util.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace xb {

std::string hwloc_version() {
  const unsigned v = hwloc_get_api_version();
  return fmt::format("API {}.{}.{}", v >> 16, (v >> 8) & 0xff, v & 0xff);
}

Hwloc::Hwloc(bool io) {
  if (hwloc_topology_init(&topo_) != 0) throw RuntimeError("hwloc: cannot initialise topology");
  if (io) {
    hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_icache_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_ALL);
  }
  if (hwloc_topology_load(topo_) != 0) {
    hwloc_topology_destroy(topo_);
    throw RuntimeError("hwloc: cannot load the machine topology");
  }
}

Hwloc::~Hwloc() { hwloc_topology_destroy(topo_); }

std::vector<unsigned> cpu_list(hwloc_const_cpuset_t set) {
  std::vector<unsigned> out;
  if (!set) return out;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i))
    out.push_back(static_cast<unsigned>(i));
  return out;
}

std::vector<std::uint64_t> numa_distances(hwloc_topology_t topo) {
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &dist,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 ||
      nr == 0 || !dist)
    return {};
  const unsigned n = dist->nbobjs;
  const unsigned total = static_cast<unsigned>(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
  std::vector<std::uint64_t> out;
  if (n == total) {
    out.assign(static_cast<std::size_t>(n) * n, 0);
    // Distance objects may be listed in any order: place by logical index.
    for (unsigned i = 0; i < n; ++i)
      for (unsigned j = 0; j < n; ++j)
        out[dist->objs[i]->logical_index * n + dist->objs[j]->logical_index] =
            dist->values[i * n + j];
  }
  hwloc_distances_release(topo, dist);
  return out;
}

}  // namespace xb
