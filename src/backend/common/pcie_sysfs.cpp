#include "backend/common/pcie_sysfs.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace xb {
namespace {

namespace fs = std::filesystem;

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

int number(const std::string& s) {
  try {
    return s.empty() ? 0 : std::stoi(s);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

LinkFacts pcie_link_facts(const std::string& pci, const std::string& root) {
  std::string addr = pci;
  std::transform(addr.begin(), addr.end(), addr.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  LinkFacts f;
  const fs::path dev = fs::path(root) / "bus" / "pci" / "devices" / addr;
  f.pcie_current_speed = first_line(dev / "current_link_speed");
  f.pcie_max_speed = first_line(dev / "max_link_speed");
  f.pcie_width = number(first_line(dev / "current_link_width"));
  f.pcie_max_width = number(first_line(dev / "max_link_width"));
  std::error_code ec;
  const fs::path real = fs::canonical(dev, ec);  // .../pci0000:00/<port>/<pci>
  if (!ec && real.has_parent_path()) {
    const fs::path port = real.parent_path();
    f.pcie_port_max_speed = first_line(port / "max_link_speed");
    f.pcie_port_max_width = number(first_line(port / "max_link_width"));
  }
  f.source = "sysfs " + addr;
  return f;
}

}  // namespace xb
