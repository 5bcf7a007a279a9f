// GPU topology: NUMA affinity and the PCIe path between GPUs from hwloc;
// NVLink counts from NVML, loaded with dlopen so that neither a build nor a
// run needs the NVIDIA driver's libraries.
#include <dlfcn.h>
#include <fmt/format.h>
#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "backend/common/hwloc_util.hpp"
#include "backend/cuda/cuda_internal.hpp"

namespace xb::cuda {
namespace {

struct PciAddr {
  unsigned domain = 0, bus = 0, dev = 0;
  bool operator==(const PciAddr&) const = default;
};

bool parse_pci(const std::string& s, PciAddr& a) {
  unsigned fn = 0;
  return std::sscanf(s.c_str(), "%x:%x:%x.%x", &a.domain, &a.bus, &a.dev, &fn) == 4;
}

// The NVML entry points used, declared from NVML's public API reference.
struct NvmlPciInfo {  // nvmlPciInfo_t (v2 layout)
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
using NvmlDevice = void*;
constexpr unsigned kNvlinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

constexpr int kP2pCapsNvlink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK
constexpr int kP2pStatusOk = 0;    // NVML_P2P_STATUS_OK

struct NvLinks {
  std::vector<std::vector<PciAddr>> peers;  // per GPU: the far end of each active link
  std::vector<char> p2p;                    // row-major: NVML says the pair talks over NVLink
};

NvLinks nvlink_peers(const std::vector<GpuInfo>& gpus) {
  NvLinks links;
  links.peers.resize(gpus.size());
  links.p2p.assign(gpus.size() * gpus.size(), 0);
  auto& out = links.peers;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return links;
  using Init = int (*)();
  using ByBus = int (*)(const char*, NvmlDevice*);
  using State = int (*)(NvmlDevice, unsigned, int*);
  using Remote = int (*)(NvmlDevice, unsigned, NvmlPciInfo*);
  using Shutdown = int (*)();
  auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
  auto by_bus = reinterpret_cast<ByBus>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto state = reinterpret_cast<State>(dlsym(lib, "nvmlDeviceGetNvLinkState"));
  auto remote = reinterpret_cast<Remote>(dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2"));
  auto shutdown = reinterpret_cast<Shutdown>(dlsym(lib, "nvmlShutdown"));
  using P2p = int (*)(NvmlDevice, NvmlDevice, int, int*);
  auto p2p = reinterpret_cast<P2p>(dlsym(lib, "nvmlDeviceGetP2PStatus"));
  if (init && by_bus && state && remote && shutdown && init() == 0) {
    std::vector<NvmlDevice> handles(gpus.size(), nullptr);
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      NvmlDevice& h = handles[g];
      if (by_bus(gpus[g].pci.c_str(), &h) != 0) continue;
      for (unsigned link = 0; link < kNvlinkMaxLinks; ++link) {
        int active = 0;
        NvmlPciInfo info{};
        if (state(h, link, &active) != 0 || active != 1) continue;
        if (remote(h, link, &info) != 0) continue;
        out[g].push_back({info.domain, info.bus, info.device});
      }
    }
    for (std::size_t a = 0; p2p && a < gpus.size(); ++a)
      for (std::size_t b = 0; b < gpus.size(); ++b) {
        int status = -1;
        if (a != b && handles[a] && handles[b] &&
            p2p(handles[a], handles[b], kP2pCapsNvlink, &status) == 0)
          links.p2p[a * gpus.size() + b] = status == kP2pStatusOk;
      }
    shutdown();
  }
  dlclose(lib);
  return links;
}

hwloc_obj_t pci_object(hwloc_topology_t t, const std::string& pci) {
  PciAddr a;
  if (!parse_pci(pci, a)) return nullptr;
  return hwloc_get_pcidev_by_busid(t, a.domain, a.bus, a.dev, 0);
}

int numa_of(hwloc_topology_t t, hwloc_obj_t pci) {
  if (!pci) return -1;
  hwloc_obj_t host = hwloc_get_non_io_ancestor_obj(t, pci);
  if (!host || !host->nodeset || hwloc_bitmap_weight(host->nodeset) != 1) return -1;
  return hwloc_bitmap_first(host->nodeset);
}

// nvidia-smi topo's PCIe classes from the lowest common ancestor.
std::string pcie_path(hwloc_topology_t t, hwloc_obj_t a, hwloc_obj_t b) {
  if (!a || !b) return "PCIe (path unknown to hwloc)";
  hwloc_obj_t common = hwloc_get_common_ancestor_obj(t, a, b);
  int bridges = 0;
  for (hwloc_obj_t o = a; o && o != common; o = o->parent)
    if (o->type == HWLOC_OBJ_BRIDGE) ++bridges;
  if (common && common->type == HWLOC_OBJ_BRIDGE) {
    if (common->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
      return "PHB (PCIe host bridge)";
    return bridges <= 1 ? "PIX (one PCIe switch)" : "PXB (PCIe switches)";
  }
  const int na = numa_of(t, a), nb = numa_of(t, b);
  if (na >= 0 && na == nb) return "NODE (PCIe through the CPU)";
  return "SYS (PCIe across CPU sockets)";
}

// Links whose far end is no GPU of ours: NVSwitch ports.
int switch_links(const std::vector<PciAddr>& peers, const std::vector<PciAddr>& gpus) {
  int n = 0;
  for (const auto& p : peers) n += std::find(gpus.begin(), gpus.end(), p) == gpus.end();
  return n;
}

}  // namespace

namespace {

// hwloc's I/O topology, or nullptr when it cannot be read (then NUMA nodes
// and PCIe paths stay unknown).
std::unique_ptr<Hwloc> io_topology() {
  try {
    return std::make_unique<Hwloc>(true);
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace

void read_numa(std::vector<GpuInfo>& gpus) {
  const auto hw = io_topology();
  if (!hw) return;
  for (auto& g : gpus) g.info.numa = numa_of(hw->get(), pci_object(hw->get(), g.pci));
}

std::vector<std::string> read_links(const std::vector<GpuInfo>& gpus) {
  const std::size_t n = gpus.size();
  std::vector<std::string> links;
  std::vector<hwloc_obj_t> objs(n, nullptr);
  const auto hw = io_topology();
  for (std::size_t g = 0; hw && g < n; ++g) objs[g] = pci_object(hw->get(), gpus[g].pci);
  const NvLinks nv = nvlink_peers(gpus);
  std::vector<PciAddr> addr(n);
  for (std::size_t g = 0; g < n; ++g) parse_pci(gpus[g].pci, addr[g]);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      int direct = 0;
      for (const auto& p : nv.peers[a]) direct += p == addr[b];
      const int to_switch = switch_links(nv.peers[a], addr);
      if (a == b)
        links.emplace_back("X");
      else if (direct > 0)
        links.push_back(fmt::format("NV{} (NVLink x{})", direct, direct));
      else if (to_switch > 0 && switch_links(nv.peers[b], addr) > 0)
        links.push_back(fmt::format("NV{} (NVLink x{} via NVSwitch)", to_switch, to_switch));
      else if (nv.p2p[a * n + b])
        links.push_back("NVLink (NVML P2P status; link count unknown)");
      else
        links.push_back(hw ? pcie_path(hw->get(), objs[a], objs[b])
                           : std::string("PCIe (no hwloc topology)"));
    }
  }
  return links;
}

}  // namespace xb::cuda
