// GPU topology: NUMA affinity and the PCIe path between GPUs from hwloc;
// NVLink counts from NVML, loaded with dlopen so that neither a build nor a
// run needs the NVIDIA driver's libraries.
#include <dlfcn.h>
#include <fmt/format.h>
#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "backend/common/hwloc_util.hpp"
#include "backend/common/nvlink.hpp"
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

// libnvidia-ml, opened and initialised for one query; `ok` false where the
// driver's library is missing (a build machine) or does not initialise.
class Nvml {
 public:
  using Device = NvmlDevice;
  Nvml() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    using Init = int (*)();
    auto init = sym<Init>("nvmlInit_v2");
    shutdown_ = sym<int (*)()>("nvmlShutdown");
    by_bus_ = sym<int (*)(const char*, NvmlDevice*)>("nvmlDeviceGetHandleByPciBusId_v2");
    ok_ = init && shutdown_ && by_bus_ && init() == 0;
  }
  ~Nvml() {
    if (ok_) shutdown_();
    if (lib_) dlclose(lib_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  bool ok() const { return ok_; }
  // The entry point `name`, or nullptr.
  template <class F>
  F sym(const char* name) const {
    return lib_ ? reinterpret_cast<F>(dlsym(lib_, name)) : nullptr;
  }
  NvmlDevice device(const std::string& pci) const {
    NvmlDevice h = nullptr;
    return ok_ && by_bus_(pci.c_str(), &h) == 0 ? h : nullptr;
  }

 private:
  void* lib_ = nullptr;
  bool ok_ = false;
  int (*shutdown_)() = nullptr;
  int (*by_bus_)(const char*, NvmlDevice*) = nullptr;
};

std::string pci_key_of(const NvmlPciInfo& p) { return pci_key(p.domain, p.bus, p.device); }

// Every GPU NVML knows, visible to CUDA or not, by PCI address.
std::vector<std::string> all_gpus(const Nvml& nvml) {
  std::vector<std::string> out;
  auto count = nvml.sym<int (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  auto by_index = nvml.sym<int (*)(unsigned, NvmlDevice*)>("nvmlDeviceGetHandleByIndex_v2");
  auto pci = nvml.sym<int (*)(NvmlDevice, NvmlPciInfo*)>("nvmlDeviceGetPciInfo_v3");
  unsigned n = 0;
  if (!count || !by_index || !pci || count(&n) != 0) return out;
  for (unsigned i = 0; i < n; ++i) {
    NvmlDevice h = nullptr;
    NvmlPciInfo info{};
    if (by_index(i, &h) == 0 && pci(h, &info) == 0) out.push_back(pci_key_of(info));
  }
  return out;
}

// A GPU's active NVLinks, each with what its far end is. A link counts by
// its state alone: one whose far end NVML cannot name is still active.
std::vector<NvlinkEnd> active_links(const Nvml& nvml, NvmlDevice h,
                                    const std::vector<std::string>& gpus) {
  std::vector<NvlinkEnd> out;
  auto state = nvml.sym<int (*)(NvmlDevice, unsigned, int*)>("nvmlDeviceGetNvLinkState");
  auto remote =
      nvml.sym<int (*)(NvmlDevice, unsigned, NvmlPciInfo*)>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  auto type = nvml.sym<int (*)(NvmlDevice, unsigned, int*)>("nvmlDeviceGetNvLinkRemoteDeviceType");
  if (!h || !state) return out;
  for (unsigned link = 0; link < kNvlinkMaxLinks; ++link) {
    int active = 0;
    if (state(h, link, &active) != 0 || active != 1) continue;
    NvmlPciInfo info{};
    const std::string far = remote && remote(h, link, &info) == 0 ? pci_key_of(info) : "";
    int t = -1;
    const std::optional<int> kind =
        type && type(h, link, &t) == 0 ? std::optional<int>(t) : std::nullopt;
    out.push_back({nvlink_end_kind(kind, far, gpus), far});
  }
  return out;
}

struct NvLinks {
  std::vector<std::vector<NvlinkEnd>> ends;  // per GPU: its active links
  std::vector<char> p2p;                     // row-major: NVML says the pair talks over NVLink
};

NvLinks nvlink_peers(const std::vector<GpuInfo>& gpus) {
  NvLinks links;
  links.ends.resize(gpus.size());
  links.p2p.assign(gpus.size() * gpus.size(), 0);
  const Nvml nvml;
  if (!nvml.ok()) return links;
  const std::vector<std::string> every = all_gpus(nvml);
  std::vector<NvmlDevice> handles(gpus.size(), nullptr);
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    handles[g] = nvml.device(gpus[g].pci);
    links.ends[g] = active_links(nvml, handles[g], every);
  }
  auto p2p = nvml.sym<int (*)(NvmlDevice, NvmlDevice, int, int*)>("nvmlDeviceGetP2PStatus");
  for (std::size_t a = 0; p2p && a < gpus.size(); ++a)
    for (std::size_t b = 0; b < gpus.size(); ++b) {
      int status = -1;
      if (a != b && handles[a] && handles[b] &&
          p2p(handles[a], handles[b], kP2pCapsNvlink, &status) == 0)
        links.p2p[a * gpus.size() + b] = status == kP2pStatusOk;
    }
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

Topology read_topology(const std::vector<GpuInfo>& gpus) {
  const std::size_t n = gpus.size();
  Topology t;
  std::vector<hwloc_obj_t> objs(n, nullptr);
  const auto hw = io_topology();
  for (std::size_t g = 0; hw && g < n; ++g) objs[g] = pci_object(hw->get(), gpus[g].pci);
  const NvLinks nv = nvlink_peers(gpus);
  for (std::size_t a = 0; a < n; ++a) {
    t.nvlinks.push_back(static_cast<int>(nv.ends[a].size()));
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) {
        t.links.emplace_back("X");
        continue;
      }
      std::string link =
          nvlink_pair(nv.ends[a], nv.ends[b], pci_key(gpus[b].pci), nv.p2p[a * n + b]);
      if (link.empty())
        link =
            hw ? pcie_path(hw->get(), objs[a], objs[b]) : std::string("PCIe (no hwloc topology)");
      t.links.push_back(std::move(link));
    }
  }
  return t;
}

ClockHolds clock_holds(const GpuInfo& gpu) {
  ClockHolds out;
  const Nvml nvml;
  if (!nvml.ok()) {
    out.why = "NVML (libnvidia-ml.so.1) is not available: clocks not read";
    return out;
  }
  const NvmlDevice h = nvml.device(gpu.pci);
  struct Violation {  // nvmlViolationTime_t
    unsigned long long reference_us, violation_ns;
  };
  auto status = nvml.sym<int (*)(NvmlDevice, int, Violation*)>("nvmlDeviceGetViolationStatus");
  if (!h || !status) {
    out.why = fmt::format("NVML has no violation counters for {}", gpu.pci);
    return out;
  }
  // nvmlPerfPolicyType_t: POWER 0, THERMAL 1, BOARD_LIMIT 3, RELIABILITY 5.
  const std::pair<int, double*> policies[] = {
      {0, &out.power_s}, {1, &out.thermal_s}, {3, &out.board_s}, {5, &out.reliability_s}};
  int read = 0;
  for (const auto& [policy, to] : policies) {
    Violation v{};
    if (status(h, policy, &v) != 0) continue;
    *to = static_cast<double>(v.violation_ns) / 1e9;
    ++read;
  }
  if (read == 0) {
    out.why = fmt::format("NVML reads no violation counter on {} (not supported)", gpu.pci);
    return out;
  }
  using Clock = int (*)(NvmlDevice, int, unsigned*);
  unsigned now = 0, max = 0;  // nvmlClockType_t NVML_CLOCK_SM = 1
  if (auto c = nvml.sym<Clock>("nvmlDeviceGetClockInfo"); c && c(h, 1, &now) == 0) out.sm_mhz = now;
  if (auto c = nvml.sym<Clock>("nvmlDeviceGetMaxClockInfo"); c && c(h, 1, &max) == 0)
    out.sm_max_mhz = max;
  out.known = true;
  return out;
}

}  // namespace xb::cuda
