#include "backend/host/throttle.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/error.hpp"

namespace xb::host {

std::vector<Throttle> parse_throttle(const std::string& text) {
  std::vector<Throttle> out;
  const auto bad = [&](const std::string& item) {
    return UsageError(fmt::format(
        "XFERBENCH_HOST_THROTTLE='{}': '{}' is not DEVICE:FACTOR[:h2d|d2h|d2d|p2p], A-B:FACTOR, "
        "host:FACTOR, rankR:FACTOR[:tx|rx] or rankA-rankB:FACTOR with FACTOR in (0, 1]",
        text, item));
  };
  std::size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    const std::size_t c1 = item.find(':');
    if (c1 == std::string::npos) throw bad(item);
    const std::size_t c2 = item.find(':', c1 + 1);
    Throttle t;
    std::string dev = item.substr(0, c1);
    const bool host = dev == "host";  // unbound host memory: device id -1
    if (host) dev = "0";
    if (dev.rfind("rank", 0) == 0) {  // rankR or rankA-rankB
      t.rank = true;
      dev = dev.substr(4);
      if (const std::size_t dash = dev.find('-'); dash != std::string::npos) {
        if (dev.compare(dash + 1, 4, "rank") != 0) throw bad(item);
        dev.erase(dash + 1, 4);
      }
    }
    if (const std::size_t dash = dev.find('-'); dash != std::string::npos) {
      const std::string peer = dev.substr(dash + 1);
      auto [pp, pec] = std::from_chars(peer.data(), peer.data() + peer.size(), t.peer);
      if (peer.empty() || pec != std::errc() || pp != peer.data() + peer.size() || t.peer < 0)
        throw bad(item);
      dev = dev.substr(0, dash);
      t.dir = t.rank ? "" : "p2p";
    }
    const std::string fac =
        item.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
    if (c2 != std::string::npos) {
      if (t.peer >= 0) throw bad(item);  // a pair is p2p (or both ways) already
      t.dir = item.substr(c2 + 1);
    }
    auto [p, ec] = std::from_chars(dev.data(), dev.data() + dev.size(), t.device);
    if (dev.empty() || ec != std::errc() || p != dev.data() + dev.size() || t.device < 0)
      throw bad(item);
    if (host) t.device = -1;
    try {
      std::size_t used = 0;
      t.factor = std::stod(fac, &used);
      if (used != fac.size()) throw bad(item);
    } catch (const std::logic_error&) {
      throw bad(item);
    }
    if (!(t.factor > 0 && t.factor <= 1)) throw bad(item);
    if (host && t.rank) throw bad(item);
    if (!t.dir.empty() &&
        (t.rank ? t.dir != "tx" && t.dir != "rx"
                : t.dir != "h2d" && t.dir != "d2h" && t.dir != "d2d" && t.dir != "p2p"))
      throw bad(item);
    t.item = item;
    out.push_back(t);
    pos = end + 1;
  }
  return out;
}

void check_throttle_targets(const std::string& text, const std::vector<Throttle>& t, int devices,
                            int ranks) {
  for (const Throttle& e : t) {
    const char* what = e.rank ? "rank" : "device";
    const int count = e.rank ? ranks : devices;
    const auto refuse = [&](const std::string& why) {
      throw UsageError(fmt::format("XFERBENCH_HOST_THROTTLE='{}': '{}' {}", text, e.item, why));
    };
    if (e.peer >= 0 && e.peer == e.device)
      refuse(fmt::format("pairs {} {} with itself (a pair is two different {}s)", what, e.device,
                         what));
    for (const int id : {e.device, e.peer})
      if (id >= count)
        refuse(fmt::format("names {} {}, but {} has {} {}{} (0..{})", what, id,
                           e.rank ? "this run" : "the host backend", count, what,
                           count == 1 ? "" : "s", count - 1));
  }
}

double throttle_factor(const std::vector<Throttle>& t, const std::string& dir, int a, int b) {
  double f = 1;
  for (const auto& e : t)
    if (!e.rank && (e.dir.empty() || e.dir == dir) &&
        (e.peer < 0 ? e.device == a || e.device == b
                    : (e.device == a && e.peer == b) || (e.device == b && e.peer == a)))
      f *= e.factor;
  return f;
}

double rank_throttle(const std::vector<Throttle>& t, int from, int to) {
  double f = 1;
  for (const auto& e : t) {
    if (!e.rank) continue;
    const bool hit = e.peer >= 0
                         ? (e.device == from && e.peer == to) || (e.device == to && e.peer == from)
                     : e.dir == "tx" ? e.device == from
                     : e.dir == "rx" ? e.device == to
                                     : e.device == from || e.device == to;
    if (hit) f *= e.factor;
  }
  return f;
}

}  // namespace xb::host
