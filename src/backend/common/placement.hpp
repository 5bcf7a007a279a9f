#pragma once
// Ranks on devices: NCCL and HCCL take one device per rank, and a node's
// ranks go to its devices by local rank (local rank modulo the node's device
// count). When a node runs more ranks than it has devices, two ranks land on
// one device and the library refuses them (NCCL: "invalid usage") only after
// the communicator is half made; this check says so first, on every rank.
#include <functional>
#include <string>
#include <vector>

#include "core/registry.hpp"

namespace xb {

class Runtime;

struct RankPlace {
  int rank = 0;
  std::string host;
  int device = 0;          // local rank modulo the devices this rank sees
  std::string physical{};  // what the device is on its host (PCI address...);
                           // two ranks that each see one device may see two
};

// "ranks 0 and 1 on host vm share GPU 0", or "" when every rank has a device
// of its own (the same physical device on the same host is a clash; an empty
// `physical` stands for the device index). Pure: tested with fake layouts.
std::string device_clash(const std::vector<RankPlace>& places, const std::string& device_word);

// Collective: gathers every rank's place and checks it. `library` and
// `device_word` name the library and its devices ("NCCL", "GPU"). The same
// verdict on every rank: "NCCL needs one GPU per rank: ranks 0 and 1 on host
// vm share GPU 0; use fewer ranks or --backend host".
// `physical(i)` names device i of this rank physically (a PCI address), so
// ranks given one GPU each by CUDA_VISIBLE_DEVICES do not clash.
Support one_device_per_rank(Runtime& rt, int devices, const std::string& library,
                            const std::string& device_word,
                            const std::function<std::string(int)>& physical = {});

}  // namespace xb
