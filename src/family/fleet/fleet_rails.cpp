#include "family/fleet/fleet_rails.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
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
