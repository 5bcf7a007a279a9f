// The `topo` description of the host, read through hwloc.
#include "backend/host/host_topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "backend/common/hwloc_util.hpp"
#include "core/sysinfo.hpp"

namespace xb {
namespace {

std::string cpus_text(hwloc_const_cpuset_t set) {
  char buf[256] = {};
  hwloc_bitmap_list_snprintf(buf, sizeof buf, set);
  return buf;
}

const char* cache_type(hwloc_obj_cache_type_t t) {
  switch (t) {
    case HWLOC_OBJ_CACHE_DATA:
      return "data";
    case HWLOC_OBJ_CACHE_INSTRUCTION:
      return "instruction";
    default:
      return "unified";
  }
}

void read_caches(hwloc_topology_t t, Topology& topo) {
  for (int type = HWLOC_OBJ_L1CACHE; type <= HWLOC_OBJ_L3ICACHE; ++type) {
    const auto ty = static_cast<hwloc_obj_type_t>(type);
    const int n = hwloc_get_nbobjs_by_type(t, ty);
    if (n <= 0) continue;
    hwloc_obj_t o = hwloc_get_obj_by_type(t, ty, 0);
    topo.caches.push_back({static_cast<int>(o->attr->cache.depth), cache_type(o->attr->cache.type),
                           o->attr->cache.size, n});
  }
}

// PCI base class names (PCI Code and ID Assignment Specification).
std::string pci_class(unsigned class_id) {
  switch (class_id >> 8) {
    case 0x01:
      return "Storage";
    case 0x02:
      return "Network";
    case 0x03:
      return (class_id & 0xff) == 0x02 ? "3D controller" : "Display";
    case 0x04:
      return "Multimedia";
    case 0x05:
      return "Memory";
    case 0x06:
      return "Bridge";
    case 0x0c:
      return "Serial bus";
    case 0x12:
      return "Accelerator";
    default:
      return fmt::format("class {:04x}", class_id);
  }
}

int closest_numa(hwloc_topology_t t, hwloc_obj_t o) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);
  if (!anc || !anc->nodeset) return -1;
  const int first = hwloc_bitmap_first(anc->nodeset);
  return hwloc_bitmap_weight(anc->nodeset) == 1 ? first : -1;
}

void read_pci(hwloc_topology_t t, Topology& topo) {
  for (hwloc_obj_t o = hwloc_get_next_pcidev(t, nullptr); o; o = hwloc_get_next_pcidev(t, o)) {
    const auto& p = o->attr->pcidev;
    PciDevice d;
    d.address = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", p.domain, p.bus, p.dev, p.func);
    d.vendor = p.vendor_id;
    d.device = p.device_id;
    const char* subtype = o->subtype ? o->subtype : nullptr;
    d.kind = subtype ? subtype : pci_class(p.class_id);
    std::string names;
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
      if (c->type == HWLOC_OBJ_OS_DEVICE && c->name)
        names += (names.empty() ? "" : ",") + std::string(c->name);
    d.name = o->name ? o->name : names;
    if (o->name && !names.empty()) d.name += " (" + names + ")";
    d.numa = closest_numa(t, o);
    if (p.linkspeed > 0) d.link = fmt::format("PCIe {:.1f} GB/s", p.linkspeed);
    topo.pci.push_back(std::move(d));
  }
}

}  // namespace

Topology read_host_topology() {
  Hwloc h(true);
  hwloc_topology_t t = h.get();
  Topology topo;
  topo.packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  topo.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  topo.pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  topo.cpu_model = cpu_model();
  const int nn = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nn; ++i) {
    hwloc_obj_t n = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    topo.nodes.push_back({n->os_index, n->attr->numanode.local_memory, cpus_text(n->cpuset)});
  }
  read_caches(t, topo);
  std::sort(topo.caches.begin(), topo.caches.end(), [](const CacheLevel& a, const CacheLevel& b) {
    return std::tie(a.depth, a.type) < std::tie(b.depth, b.type);
  });
  read_pci(t, topo);
  topo.distances = numa_distances(t);
  if (!topo.distances.empty()) {
    topo.distance_source = "hwloc (firmware SLIT/HMAT)";
  } else if (nn <= 1) {
    topo.distances = {10};
    topo.distance_source = "single NUMA node (local distance 10)";
  } else {
    topo.distance_source = "none: the firmware reports no NUMA distances";
  }
  return topo;
}

}  // namespace xb
