#pragma once
// A plain description of the machine (hwloc's view on the host backend),
// for `xferbench topo`, and what `list` shows. Values only: backends and the
// families fill them, reporters format them.
#include <cstdint>
#include <string>
#include <vector>

#include "core/schema.hpp"
#include "core/units.hpp"

namespace xb {

struct CacheLevel {
  int depth = 0;     // 1, 2, 3
  std::string type;  // "data", "instruction", "unified"
  Bytes size = 0;    // one instance
  int count = 0;     // instances in the machine
};

struct NumaNode {
  unsigned os_index = 0;
  Bytes memory = 0;
  std::string cpus;  // "0-1"
};

struct PciDevice {
  std::string address;  // "0000:00:02.0"
  std::string kind;     // "Storage", "Ethernet", "GPU", ...
  std::uint16_t vendor = 0;
  std::uint16_t device = 0;
  std::string name;  // hwloc's name or the OS device names ("eth0")
  int numa = -1;     // closest NUMA node, -1 when unknown
  std::string link;  // "PCIe 16.0 GT/s x16" when known
};

struct Topology {
  int packages = 0;
  int cores = 0;
  int pus = 0;
  std::string cpu_model;
  std::vector<NumaNode> nodes;
  std::vector<CacheLevel> caches;
  std::vector<PciDevice> pci;
  // NUMA distance matrix (SLIT-like, 10 = local), row-major nodes x nodes;
  // `distance_source` says where it came from ("hwloc", or "none: ...").
  std::vector<std::uint64_t> distances;
  std::string distance_source;
};

// `topo`: the machine plus the selected backend's devices and their links.
struct TopoView {
  Topology machine;
  std::string backend;
  std::vector<std::string> device_names;
  std::vector<std::string> links;  // row-major devices x devices link types
};

// `list`: what is compiled in, what runs here, and why not.
struct ListView {
  struct BackendLine {
    std::string name;
    bool available = false;
    std::string reason;
    bool broken = false;  // its hardware is there, but fails
  };
  struct BenchLine {
    std::string key;
    std::string family;
    std::string description;
    bool runnable = false;
    std::string reason;
  };
  std::vector<BackendLine> backends;
  std::string selected;
  std::vector<std::string> device_names;
  std::vector<BenchLine> benchmarks;
  std::vector<RecordSchema> schemas;  // each family's record fields (JSON only)
};

}  // namespace xb
