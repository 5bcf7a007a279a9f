#pragma once
// Which NIC sits nearest a device on PCI: `fleet --rails` on a GPU backend
// gives GPU g the NIC nearest it as its rail (NCCL's rule: the fewest PCI
// hops between the two devices' sysfs paths). Read from /sys/devices via
// /sys/class/infiniband/*/device, /sys/class/net/*/device and
// /sys/bus/pci/devices; XFERBENCH_SYSFS_ROOT stands in for "/".
#include <string>
#include <vector>

#include "core/nic_counters.hpp"

namespace xb {

// A NIC and its PCI device's path under /sys/devices
// ("/sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0").
struct PciNic {
  std::string name;  // an RDMA port as UCX names it ("mlx5_0:1"), or an interface ("eth0")
  std::string path;
};

// This host's NICs on PCI: every RDMA port, then the interfaces on a PCI
// device that no RDMA device already stands for (veths, bridges and lo have
// none). Sorted by name within each kind.
std::vector<PciNic> pci_nics(const std::string& root = sysfs_root());

// A PCI device's path by its bus id ("00000000:17:00.0", NVML's, or
// "0000:17:00.0"); "" where there is none.
std::string pci_path(const std::string& bus_id, const std::string& root = sysfs_root());

// PCI hops between two device paths: the components of each past their
// common prefix. Pure.
int pci_hops(const std::string& a, const std::string& b);

// For each device path, the name of the NIC fewest hops away ("" where the
// path is "" or there is no NIC); a tie goes to the first in `nics`. Pure.
std::vector<std::string> nearest_nics(const std::vector<std::string>& device_paths,
                                      const std::vector<PciNic>& nics);

}  // namespace xb
