#include "backend/common/placement.hpp"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "core/sysinfo.hpp"
#include "runtime/runtime.hpp"

namespace xb {

std::string device_clash(const std::vector<RankPlace>& places, const std::string& device_word) {
  // (host, physical device) -> the lowest rank there
  std::map<std::pair<std::string, std::string>, const RankPlace*> first;
  for (const auto& p : places) {
    const std::string id = p.physical.empty() ? std::to_string(p.device) : p.physical;
    const auto [it, fresh] = first.emplace(std::pair(p.host, id), &p);
    if (!fresh)
      return fmt::format("ranks {} and {} on host {} share {} {}{}", it->second->rank, p.rank,
                         p.host, device_word, p.device,
                         p.physical.empty() ? "" : fmt::format(" ({})", p.physical));
  }
  return "";
}

Support one_device_per_rank(Runtime& rt, int devices, const std::string& library,
                            const std::string& device_word,
                            const std::function<std::string(int)>& physical) {
  // Every rank takes part in the allgather, even one that sees no device.
  const int mine = devices > 0 ? rt.local_rank() % devices : -1;
  const std::string id = mine >= 0 && physical ? physical(mine) : std::string();
  std::vector<RankPlace> places;
  int rank = 0;
  bool blind = false;
  for (const auto& text : rt.allgather(fmt::format("{}\n{}\n{}", mine, id, host_name()))) {
    const auto a = text.find('\n'), b = text.find('\n', a + 1);
    const int dev = std::stoi(text.substr(0, a));
    blind = blind || dev < 0;
    places.push_back({rank++, text.substr(b + 1), dev, text.substr(a + 1, b - a - 1)});
  }
  if (blind)
    return Support::no(
        fmt::format("{} needs a {} on every rank: some rank sees none", library, device_word));
  const std::string clash = device_clash(places, device_word);
  if (clash.empty()) return Support::yes();
  return Support::no(fmt::format("{} needs one {} per rank: {}; use fewer ranks or --backend host",
                                 library, device_word, clash));
}

}  // namespace xb
