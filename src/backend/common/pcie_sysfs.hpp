#pragma once
// A PCI device's PCIe link as sysfs shows it, for doctor's expected figures:
// GPU-free, so it is tested with a fake sysfs tree (backend/cuda reads the
// GPUs through it; so would any backend whose devices are PCI functions).
#include <string>

#include "backend/backend.hpp"

namespace xb {

// The PCIe fields of LinkFacts for the PCI function `pci` ("0000:17:00.0",
// any case) under the sysfs folder `root` (/sys; tests: a fake tree):
// its own current and maximum speed and width (bus/pci/devices/<pci>/), and
// the maxima of its upstream port, the bridge whose folder holds the
// device's in /sys/devices/... (bus/pci/devices/<pci> links there): a Gen5
// card in a Gen4 slot trains to Gen4 at most. Empty / 0 where a file is
// missing or unreadable, the port's too when the device sits on a root bus
// with no bridge above it (a VM's passthrough GPU). `source` names it.
LinkFacts pcie_link_facts(const std::string& pci, const std::string& root = "/sys");

}  // namespace xb
