#include "family/fleet/fleet_evidence.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace xb {
namespace {

using Counts = std::map<std::string, std::uint64_t>;  // "xb1 rx_errors" -> growth

// "xb1 rx_errors +3, xb1 symbol_error +1": the largest growth first, at
// most three, then how many more.
std::string text_of(const Counts& c) {
  std::vector<std::pair<std::string, std::uint64_t>> sorted(c.begin(), c.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  std::string out;
  std::size_t shown = 0;
  for (const auto& [name, grew] : sorted) {
    if (++shown > 3) {
      out += fmt::format(" (and {} more)", c.size() - 3);
      break;
    }
    out += fmt::format("{}{} +{}", out.empty() ? "" : ", ", name, grew);
  }
  return out;
}

}  // namespace

void add_counter_evidence(FleetJudgement& j, const std::vector<std::string>& names,
                          const std::vector<PairFigures>& figures) {
  std::map<std::string, Counts> host;                         // "A" -> its NIC's counts
  std::map<std::string, std::map<std::string, Counts>> link;  // "A<->B" -> side -> counts
  for (const auto& f : figures) {
    const std::string& a = names[static_cast<std::size_t>(f.a)];
    const std::string& b = names[static_cast<std::size_t>(f.b)];
    const std::string ab = fmt::format("{}<->{}", a, b), ba = fmt::format("{}<->{}", b, a);
    for (const auto& [side, counts] : {std::pair{&a, &f.a_errors}, std::pair{&b, &f.b_errors}})
      for (const auto& [name, grew] : *counts) {
        host[*side][name] += grew;
        link[ab][*side][name] += grew;
        link[ba][*side][name] += grew;
      }
  }
  // A rail whose bytes took another NIC: a WARN row of the host, once.
  std::map<std::string, std::string> astray;
  for (const auto& f : figures) {
    if (!f.a_astray.empty()) astray.emplace(names[static_cast<std::size_t>(f.a)], f.a_astray);
    if (!f.b_astray.empty()) astray.emplace(names[static_cast<std::size_t>(f.b)], f.b_astray);
  }
  for (const auto& [where, why] : astray)
    j.findings.push_back({"rail", where, Verdict::warn, 0, 0, "GB/s",
                          "this rail's bytes went through another NIC than its own: " + why});
  for (auto& f : j.findings) {
    if (f.check == "host") {
      if (const auto it = host.find(f.where); it != host.end())
        f.why += "; error counters that grew during its pairs: " + text_of(it->second);
    } else if (f.check == "link") {
      const auto it = link.find(f.where);
      if (it == link.end()) continue;
      std::string text;
      for (const auto& [side, counts] : it->second)
        text += fmt::format("{}{}: {}", text.empty() ? "" : "; ", side, text_of(counts));
      f.why += "; error counters that grew during the pair: " + text;
    }
  }
}

}  // namespace xb
