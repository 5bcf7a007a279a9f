#pragma once
// How two GPUs are joined over NVLink, from what NVML says of each GPU's
// active links: pure, so the classification is tested with recorded NVML
// answers on machines without a GPU (backend/cuda reads NVML).
#include <optional>
#include <string>
#include <vector>

namespace xb {

// The far end of one active NVLink.
struct NvlinkEnd {
  enum class Kind { gpu, nvswitch, unknown };
  Kind kind = Kind::unknown;
  std::string pci;  // the far end's PCI address, "dddd:bb:dd"; "" where NVML did not say
};

// What the far end of a link is: NVML's remote device type where the
// driver has nvmlDeviceGetNvLinkRemoteDeviceType (0 GPU, 2 switch, others
// unknown); else its PCI address against every GPU NVML knows, visible to
// CUDA or not (a GPU hidden by CUDA_VISIBLE_DEVICES or Slurm is a GPU, not a
// switch port); else unknown.
NvlinkEnd::Kind nvlink_end_kind(std::optional<int> remote_type, const std::string& far_pci,
                                const std::vector<std::string>& all_gpu_pcis);

// The NVLink between visible GPUs a and b: "NVk (NVLink xk)" for k direct
// links, "NVk (NVLink xk via NVSwitch)" when both reach NVSwitch ports (k:
// a's switch links), "NVLink (NVML P2P status; link count unknown)" when
// NVML says they talk over NVLink but the links do not show how; "" for no
// NVLink (the caller names the PCIe path).
std::string nvlink_pair(const std::vector<NvlinkEnd>& a, const std::vector<NvlinkEnd>& b,
                        const std::string& b_pci, bool p2p_over_nvlink);

// "0000:17:00.0" or "00000000:17:00.0" -> "0000:17:00"; "" for garbage.
std::string pci_key(const std::string& bus_id);
// The same key from the numbers (NVML's PCI info).
std::string pci_key(unsigned domain, unsigned bus, unsigned device);

// The spellings of NVML (nvmlPciInfo_t.busId, nvmlDeviceGetUUID) that
// dcgm-exporter writes as its `pci_bus_id` and `UUID` labels, so that
// doctor's metrics join with its: "0000:3b:00.0" -> "00000000:3B:00.0"
// ("" for garbage); 16 bytes -> "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
std::string nvml_bus_id(const std::string& bus_id);
std::string nvml_uuid(const unsigned char (&bytes)[16]);

}  // namespace xb
