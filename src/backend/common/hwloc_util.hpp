#pragma once
// hwloc helpers shared by the host backend, the host topology reader and the
// CUDA backend's GPU topology.
#include <hwloc.h>

#include <cstdint>
#include <string>
#include <vector>

namespace xb {

// The hwloc library's API version at run time ("API 2.8.0": hwloc 2.8 and 2.9 share it).
std::string hwloc_version();

// RAII hwloc topology; `io` also keeps PCI and OS devices. Throws RuntimeError.
class Hwloc {
 public:
  explicit Hwloc(bool io);
  ~Hwloc();
  Hwloc(const Hwloc&) = delete;
  Hwloc& operator=(const Hwloc&) = delete;
  hwloc_topology_t get() const { return topo_; }

 private:
  hwloc_topology_t topo_ = nullptr;
};

std::vector<unsigned> cpu_list(hwloc_const_cpuset_t set);

// Row-major NUMA distances by node logical index; empty when hwloc has none
// (single-node machines, or firmware without a SLIT table).
std::vector<std::uint64_t> numa_distances(hwloc_topology_t topo);

}  // namespace xb
