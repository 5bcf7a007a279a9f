#include "backend/common/placement.hpp"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "core/sysinfo.hpp"
#include "runtime/runtime.hpp"

namespace xb {

std::string device_clash(const std::vector<RankPlace>& places, const std::string& device_word) {
  std::map<std::pair<std::string, int>, int> first;  // (host, device) -> lowest rank there
  for (const auto& p : places) {
    const auto [it, fresh] = first.emplace(std::pair(p.host, p.device), p.rank);
    if (!fresh)
      return fmt::format("ranks {} and {} on host {} share {} {}", it->second, p.rank, p.host,
                         device_word, p.device);
  }
  return "";
}

Support one_device_per_rank(Runtime& rt, int devices, const std::string& library,
                            const std::string& device_word) {
  if (devices < 1)
    return Support::no(fmt::format("{} needs a {}: none is visible", library, device_word));
  const int mine = rt.local_rank() % devices;
  std::vector<RankPlace> places;
  int rank = 0;
  for (const auto& text : rt.allgather(fmt::format("{}\n{}", mine, host_name()))) {
    const auto nl = text.find('\n');
    places.push_back({rank++, text.substr(nl + 1), std::stoi(text.substr(0, nl))});
  }
  const std::string clash = device_clash(places, device_word);
  if (clash.empty()) return Support::yes();
  return Support::no(fmt::format("{} needs one {} per rank: {}; use fewer ranks or --backend host",
                                 library, device_word, clash));
}

}  // namespace xb
