#pragma once
// `fleet --rails` on the host backend: NIC i of every host is rail i. Each
// rail has its own UCX worker bound to that NIC (engine/ucx_tag.hpp), so a
// pair of a rail moves its bytes through NIC i of both hosts, not through
// whichever NIC MPI picks; the pair itself is the same (fleet_pairs.hpp).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/nic_near.hpp"
#include "family/fleet/fleet_pairs.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// The rails' NICs: --nic's list (UCX device names), else every InfiniBand
// port of this host ("mlx5_0:1", in order). UsageError when there are none
// or one does not exist here.
std::vector<std::string> rail_nics(const std::string& nic_option);

// The rails of this host: --nic's list on any backend; else on the host
// backend every InfiniBand port (rail_nics), on a GPU backend the NIC nearest
// each device on PCI (core/nic_near.hpp), each once, in device order, with
// `how` saying which devices each serves ("GPU 0,1 -> mlx5_0:1; ..."). Empty
// on a GPU backend that does not say where its devices sit, or where no NIC
// sits on PCI (`how` says so). UsageError for a bad --nic.
std::vector<std::string> choose_rails(const std::string& nic_option, const Backend& be,
                                      std::string& how);

// choose_rails' rule on devices at `device_paths` (their PCI paths, "" where
// not known): the nearest NIC of each, each NIC once; `device` names them
// in `how` ("GPU"). Pure.
std::vector<std::string> rails_of_devices(const std::vector<std::string>& device_paths,
                                          const std::vector<PciNic>& nics,
                                          const std::string& device, std::string& how);

// Collective: "" when every rank found `count` rails as rank 0 did, else
// the usage error naming the first that did not.
std::string rails_mismatch(Runtime& rt, std::size_t count);

// Every rank: rail `nic`'s link (collective: the workers' addresses go
// through rank 0). RuntimeError, the same on every rank, when a rank cannot
// open a worker on it.
std::unique_ptr<PairLink> open_rail(Runtime& rt, const std::string& nic);

// "H#3 rail 1 (xb1)": how verdicts name a host on a rail.
std::string rail_label(const std::string& host, int rail, const std::string& nic);

// rail_label's parts back, from a name or a rail alone ("rail 1 (xb1)": no
// host); nullopt for a name of no rail.
struct RailName {
  std::string host;  // "" for a rail's own rows
  int rail = -1;
  std::string nic;
};
std::optional<RailName> parse_rail_label(const std::string& name);

}  // namespace xb
