#include "family/copy/copy_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace xb {

const char* to_string(CopyCase c) {
  switch (c) {
    case CopyCase::h2d:
      return "h2d";
    case CopyCase::d2h:
      return "d2h";
    case CopyCase::d2d:
      return "d2d";
    case CopyCase::p2p:
      return "p2p";
  }
  return "?";
}

const char* CopyGroup::record_case() const {
  if (kase != CopyCase::p2p) return to_string(kase);
  switch (flow) {
    case Flow::bidir:
      return "p2p_bidir";
    case Flow::local:
      return "p2p_local";
    default:
      return "p2p";
  }
}

std::string CopyGroup::label() const {
  auto end = [](int d) { return d < 0 ? std::string("host") : std::to_string(d); };
  const char* arrow = flow == Flow::bidir ? "<->" : "->";
  return fmt::format("{} {}{}{}", record_case(), end(src), arrow, end(dst));
}

Bytes CopyGroup::footprint(Bytes bytes) const {
  // Two buffers per direction, both directions at once for bidir.
  return (flow == Flow::bidir ? 4 : 2) * bytes;
}

std::vector<CopyGroup> plan_copy(const CopyConfig& cfg, int ndevices) {
  std::vector<int> devs;
  if (cfg.device) {
    devs.push_back(*cfg.device);
  } else {
    for (int d = 0; d < ndevices; ++d) devs.push_back(d);
  }
  std::vector<CopyGroup> out;
  for (CopyCase c : cfg.cases) {
    if (c != CopyCase::p2p) {
      for (int d : devs) {
        const int src = c == CopyCase::h2d ? -1 : d;
        const int dst = c == CopyCase::d2h ? -1 : d;
        out.push_back({c, Flow::uni, src, dst, &cfg.sizes, cfg.iters});
      }
      continue;
    }
    std::vector<std::pair<int, int>> pairs;
    if (cfg.src && cfg.dst) {
      pairs.emplace_back(*cfg.src, *cfg.dst);
    } else {
      for (int s = 0; s < ndevices; ++s)
        for (int d = 0; d < ndevices; ++d)
          if (s != d) pairs.emplace_back(s, d);
    }
    if (pairs.empty()) {  // one device: a single waived group
      out.push_back({c, Flow::uni, -1, -1, &cfg.p2p_sizes, cfg.p2p_iters});
      continue;
    }
    std::vector<int> local;
    for (auto [s, d] : pairs) {
      out.push_back({c, Flow::uni, s, d, &cfg.p2p_sizes, cfg.p2p_iters});
      for (int x : {s, d})
        if (std::find(local.begin(), local.end(), x) == local.end()) local.push_back(x);
    }
    if (cfg.bidir)
      for (auto [s, d] : pairs)
        if (s < d || (cfg.src && cfg.dst))
          out.push_back({c, Flow::bidir, s, d, &cfg.p2p_sizes, cfg.p2p_iters});
    std::sort(local.begin(), local.end());
    for (int x : local) out.push_back({c, Flow::local, x, x, &cfg.p2p_sizes, cfg.p2p_iters});
  }
  return out;
}

}  // namespace xb
