#include "backend/common/nvlink.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace xb {

NvlinkEnd::Kind nvlink_end_kind(std::optional<int> remote_type, const std::string& far_pci,
                                const std::vector<std::string>& all_gpu_pcis) {
  if (remote_type) {
    if (*remote_type == 0) return NvlinkEnd::Kind::gpu;
    if (*remote_type == 2) return NvlinkEnd::Kind::nvswitch;
    return NvlinkEnd::Kind::unknown;
  }
  if (far_pci.empty()) return NvlinkEnd::Kind::unknown;
  return std::find(all_gpu_pcis.begin(), all_gpu_pcis.end(), far_pci) != all_gpu_pcis.end()
             ? NvlinkEnd::Kind::gpu
             : NvlinkEnd::Kind::nvswitch;
}

std::string nvlink_pair(const std::vector<NvlinkEnd>& a, const std::vector<NvlinkEnd>& b,
                        const std::string& b_pci, bool p2p_over_nvlink) {
  const auto count = [](const std::vector<NvlinkEnd>& links, NvlinkEnd::Kind k,
                        const std::string& pci) {
    return static_cast<int>(std::count_if(links.begin(), links.end(), [&](const NvlinkEnd& e) {
      return e.kind == k && (pci.empty() || e.pci == pci);
    }));
  };
  if (const int direct = b_pci.empty() ? 0 : count(a, NvlinkEnd::Kind::gpu, b_pci); direct > 0)
    return fmt::format("NV{} (NVLink x{})", direct, direct);
  const int to_switch = count(a, NvlinkEnd::Kind::nvswitch, "");
  if (to_switch > 0 && count(b, NvlinkEnd::Kind::nvswitch, "") > 0)
    return fmt::format("NV{} (NVLink x{} via NVSwitch)", to_switch, to_switch);
  if (p2p_over_nvlink) return "NVLink (NVML P2P status; link count unknown)";
  return "";
}

std::string pci_key(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, dev = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x", &domain, &bus, &dev) != 3) return "";
  return pci_key(domain, bus, dev);
}

std::string pci_key(unsigned domain, unsigned bus, unsigned device) {
  return fmt::format("{:04x}:{:02x}:{:02x}", domain & 0xffffu, bus, device);
}

std::string nvml_bus_id(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return "";
  return fmt::format("{:08X}:{:02X}:{:02X}.{:X}", domain, bus, dev, fn);
}

std::string nvml_uuid(const unsigned char (&bytes)[16]) {
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", bytes[i]);
  }
  return out;
}

}  // namespace xb
