#include "family/fleet/fleet_rails.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "core/nic_near.hpp"
#include "engine/ucx_tag.hpp"
#include "family/engine/engine_bench.hpp"
#include "family/parse.hpp"

namespace xb {
namespace {

class RailTransfer final : public Runtime::Transfer {
 public:
  explicit RailTransfer(std::unique_ptr<engine::TagChannel::Message> m) : m_(std::move(m)) {}
  bool done() override { return m_->done(); }
  bool cancel() override { return m_->cancel(); }

 private:
  std::unique_ptr<engine::TagChannel::Message> m_;
};

class RailLink final : public PairLink {
 public:
  RailLink(const std::string& nic, int rank) : ch_(nic, rank) {}
  engine::TagChannel& channel() { return ch_; }
  std::unique_ptr<Runtime::Transfer> isend(std::span<const std::byte> data, int peer,
                                           int tag) override {
    return std::make_unique<RailTransfer>(ch_.isend(data, peer, tag));
  }
  std::unique_ptr<Runtime::Transfer> irecv(std::span<std::byte> data, int peer, int tag) override {
    return std::make_unique<RailTransfer>(ch_.irecv(data, peer, tag));
  }

 private:
  engine::TagChannel ch_;
};

std::string to_hex(const std::string& bytes) {
  std::string out;
  out.reserve(2 * bytes.size());
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

std::string from_hex(const std::string& hex) {
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

}  // namespace

std::vector<std::string> rail_nics(const std::string& nic_option) {
  std::vector<std::string> out;
  if (!nic_option.empty()) {
    for (const auto& n : option_list("--nic", nic_option, "mlx5_0:1,mlx5_1:1")) {
      check_engine_nic(n);
      if (std::find(out.begin(), out.end(), n) != out.end())
        throw UsageError(fmt::format("--nic: {} is given twice (a rail is one NIC)", n));
      out.push_back(n);
    }
    return out;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator("/sys/class/infiniband", ec))
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", ec))
      out.push_back(dev.path().filename().string() + ":" + port.path().filename().string());
  std::sort(out.begin(), out.end());
  if (out.empty())
    throw UsageError(
        "--rails on the host backend pairs NIC i of one host with NIC i of another: this host "
        "has no InfiniBand port; name the rails' NICs with --nic (e.g. --nic eth0,eth1)");
  return out;
}

std::vector<std::string> rails_of_devices(const std::vector<std::string>& device_paths,
                                          const std::vector<PciNic>& nics,
                                          const std::string& device, std::string& how) {
  const std::vector<std::string> near = nearest_nics(device_paths, nics);
  std::vector<std::string> out;
  std::vector<std::vector<int>> served;
  for (std::size_t g = 0; g < near.size(); ++g) {
    if (near[g].empty()) continue;
    const auto at = std::find(out.begin(), out.end(), near[g]);
    if (at == out.end()) {
      out.push_back(near[g]);
      served.push_back({static_cast<int>(g)});
    } else {
      served[static_cast<std::size_t>(at - out.begin())].push_back(static_cast<int>(g));
    }
  }
  how.clear();
  for (std::size_t r = 0; r < out.size(); ++r)
    how += fmt::format("{}{} {} -> {}", how.empty() ? "" : "; ", device, fmt::join(served[r], ","),
                       out[r]);
  if (out.empty())
    how = fmt::format(
        "the rail of device g is the NIC nearest it on PCI, and none was found here ({}): give "
        "the rails' NICs with --nic",
        std::all_of(device_paths.begin(), device_paths.end(),
                    [](const std::string& p) { return p.empty(); })
            ? "this backend does not say where its devices sit on PCI"
            : "no RDMA port or PCI network interface");
  return out;
}

std::vector<std::string> choose_rails(const std::string& nic_option, const Backend& be,
                                      std::string& how) {
  if (!nic_option.empty() || be.name() == "host") return rail_nics(nic_option);
  std::vector<std::string> paths;
  paths.reserve(be.devices().size());
  for (const auto& d : be.devices()) paths.push_back(pci_path(d.pci_bus_id));
  return rails_of_devices(paths, pci_nics(), be.name() == "cuda" ? "GPU" : "NPU", how);
}

std::string rails_mismatch(Runtime& rt, std::size_t count) {
  const auto rails = rt.allgather(std::to_string(count));
  for (std::size_t k = 1; k < rails.size(); ++k)
    if (rails[k] != rails[0])
      return fmt::format(
          "--rails: rank {} found {} rail(s) where rank 0 found {}: every host needs the same "
          "count (give the rails' NICs with --nic)",
          k, rails[k], rails[0]);
  return "";
}

std::unique_ptr<PairLink> open_rail(Runtime& rt, const std::string& nic) {
  std::unique_ptr<RailLink> link;
  std::string err;
  try {
    link = std::make_unique<RailLink>(nic, rt.rank());
  } catch (const RuntimeError& e) {
    err = fmt::format("rank {}: no UCX worker on {}: {}", rt.rank(), nic, e.what());
  }
  err = rt.agree(err);
  if (!err.empty()) throw RuntimeError(err);
  auto addresses = rt.allgather(to_hex(link->channel().address()));
  for (auto& a : addresses) a = from_hex(a);
  link->channel().set_peers(std::move(addresses));
  return link;
}

std::string rail_label(const std::string& host, int rail, const std::string& nic) {
  return fmt::format("{} rail {} ({})", host, rail, nic);
}

std::optional<RailName> parse_rail_label(const std::string& name) {
  const std::size_t at = name.rfind("rail ");
  if (at == std::string::npos || (at > 0 && name[at - 1] != ' ') || name.back() != ')')
    return std::nullopt;
  const std::size_t open = name.find(" (", at);
  if (open == std::string::npos) return std::nullopt;
  RailName out;
  try {
    std::size_t used = 0;
    const std::string number = name.substr(at + 5, open - at - 5);
    out.rail = std::stoi(number, &used);
    if (used != number.size() || out.rail < 0) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  out.host = at > 0 ? name.substr(0, at - 1) : "";
  out.nic = name.substr(open + 2, name.size() - open - 3);
  return out;
}

}  // namespace xb
