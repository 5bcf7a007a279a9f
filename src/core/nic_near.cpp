#include "core/nic_near.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>
#include <set>
#include <system_error>

namespace xb {
namespace {

namespace fs = std::filesystem;

// The device's path with the root taken off ("" where it does not resolve).
std::string resolved(const fs::path& link, const std::string& root) {
  std::error_code ec;
  const fs::path p = fs::canonical(link, ec);
  if (ec) return "";
  std::string s = p.string();
  if (!root.empty()) {
    const std::string r = fs::canonical(root, ec).string();
    if (ec || s.compare(0, r.size(), r) != 0) return "";
    s = s.substr(r.size());
  }
  return s;
}

std::vector<std::string> parts(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& c : fs::path(path)) {
    const std::string s = c.string();
    if (!s.empty() && s != "/") out.push_back(s);
  }
  return out;
}

}  // namespace

std::vector<PciNic> pci_nics(const std::string& root) {
  std::vector<PciNic> rdma, net;
  std::set<std::string> taken;  // PCI devices an RDMA port stands for
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator(root + "/sys/class/infiniband", ec)) {
    const std::string path = resolved(dev.path() / "device", root);
    if (path.empty()) continue;
    taken.insert(path);
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", ec))
      rdma.push_back(
          {dev.path().filename().string() + ":" + port.path().filename().string(), path});
  }
  for (const auto& dev : fs::directory_iterator(root + "/sys/class/net", ec)) {
    const std::string path = resolved(dev.path() / "device", root);
    if (path.empty() || taken.count(path) || path.find("/pci") == std::string::npos) continue;
    net.push_back({dev.path().filename().string(), path});
  }
  const auto by_name = [](const PciNic& a, const PciNic& b) { return a.name < b.name; };
  std::sort(rdma.begin(), rdma.end(), by_name);
  std::sort(net.begin(), net.end(), by_name);
  rdma.insert(rdma.end(), net.begin(), net.end());
  return rdma;
}

std::string pci_path(const std::string& bus_id, const std::string& root) {
  if (bus_id.size() < 12) return "";
  std::string id = bus_id.substr(bus_id.size() - 12);  // "0000:17:00.0"
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return resolved(fs::path(root + "/sys/bus/pci/devices") / id, root);
}

int pci_hops(const std::string& a, const std::string& b) {
  const auto pa = parts(a), pb = parts(b);
  std::size_t common = 0;
  while (common < pa.size() && common < pb.size() && pa[common] == pb[common]) ++common;
  return static_cast<int>(pa.size() - common + pb.size() - common);
}

std::vector<std::string> nearest_nics(const std::vector<std::string>& device_paths,
                                      const std::vector<PciNic>& nics) {
  std::vector<std::string> out;
  out.reserve(device_paths.size());
  for (const auto& d : device_paths) {
    std::string best;
    int hops = INT_MAX;
    for (const auto& n : nics)
      if (!d.empty() && pci_hops(d, n.path) < hops) hops = pci_hops(d, n.path), best = n.name;
    out.push_back(best);
  }
  return out;
}

}  // namespace xb
