#include "family/copy/copy_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "family/copy/copy_bench.hpp"

namespace xb {
namespace {

constexpr std::string_view kTotal = "_total";
constexpr std::string_view kRead = "_read";

std::string with_op(const char* kase, P2pOp op) {
  return op == P2pOp::read ? std::string(kase) + std::string(kRead) : std::string(kase);
}

// The executing device of a device-to-device leg under `op`.
std::optional<int> driver(int src, int dst, P2pOp op) { return op == P2pOp::read ? dst : src; }

CopyGroup group(const PlanInput& in, std::string kase, bool p2p) {
  CopyGroup g;
  g.kase = std::move(kase);
  g.sizes = p2p ? &in.cfg.p2p_sizes : &in.cfg.sizes;
  g.iters = p2p ? in.cfg.p2p_iters : in.cfg.iters;
  return g;
}

// h2d / d2h: one device at a time, and with --bidir both ways at once.
void plan_host_one(const PlanInput& in, bool to_device, std::vector<CopyGroup>& out) {
  for (int d : in.devices) {
    CopyGroup g = group(in, to_device ? copy_case::h2d : copy_case::d2h, false);
    g.src = to_device ? -1 : d;
    g.dst = to_device ? d : -1;
    g.legs = {{g.src, g.dst, {}}};
    out.push_back(std::move(g));
  }
  if (!in.cfg.bidir) return;
  for (int d : in.devices) {
    CopyGroup g = group(in, copy_case::host_bidir, false);
    g.src = -1;
    g.dst = d;
    g.legs = {{-1, d, {}}, {d, -1, {}}};
    g.both_ways = g.total = g.doubled_others = true;
    out.push_back(std::move(g));
  }
}

void plan_h2d(const PlanInput& in, std::vector<CopyGroup>& out) { plan_host_one(in, true, out); }
void plan_d2h(const PlanInput& in, std::vector<CopyGroup>& out) { plan_host_one(in, false, out); }

void plan_d2d(const PlanInput& in, std::vector<CopyGroup>& out) {
  for (int d : in.devices) {
    CopyGroup g = group(in, copy_case::d2d, false);
    g.src = g.dst = d;
    g.legs = {{d, d, {}}};
    out.push_back(std::move(g));
  }
}

// Every ordered pair (or --src/--dst), each --p2p-op, the --bidir forms and
// the same-device reference of each device taking part.
void plan_p2p(const PlanInput& in, std::vector<CopyGroup>& out) {
  const CopyConfig& cfg = in.cfg;
  std::vector<std::pair<int, int>> pairs;
  if (cfg.src && cfg.dst) {
    pairs.emplace_back(*cfg.src, *cfg.dst);
  } else {
    for (int s = 0; s < in.ndevices; ++s)
      for (int d = 0; d < in.ndevices; ++d)
        if (s != d) pairs.emplace_back(s, d);
  }
  if (pairs.empty()) {  // one device: a single waived group
    out.push_back(group(in, copy_case::p2p, true));
    return;
  }
  for (P2pOp op : cfg.p2p_ops) {
    for (auto [s, d] : pairs) {
      CopyGroup g = group(in, with_op(copy_case::p2p, op), true);
      g.src = s;
      g.dst = d;
      g.legs = {{s, d, driver(s, d, op)}};
      out.push_back(std::move(g));
    }
    if (!cfg.bidir) continue;
    for (auto [s, d] : pairs) {
      if (s > d && !(cfg.src && cfg.dst)) continue;  // each unordered pair once
      CopyGroup g = group(in, with_op(copy_case::p2p, op) + "_bidir", true);
      g.src = s;
      g.dst = d;
      g.legs = {{s, d, driver(s, d, op)}, {d, s, driver(d, s, op)}};
      g.both_ways = g.total = true;
      out.push_back(std::move(g));
    }
  }
  std::vector<int> local;
  for (auto [s, d] : pairs)
    for (int x : {s, d})
      if (std::find(local.begin(), local.end(), x) == local.end()) local.push_back(x);
  std::sort(local.begin(), local.end());
  for (int x : local) {
    CopyGroup g = group(in, copy_case::p2p_local, true);
    g.src = g.dst = x;
    g.legs = {{x, x, {}}};
    out.push_back(std::move(g));
  }
}

// Every device and the host at once: one way, and with --bidir both ways.
void plan_all_host(const PlanInput& in, bool to_host, std::vector<CopyGroup>& out) {
  CopyGroup g = group(in, to_host ? copy_case::all_to_host : copy_case::host_to_all, false);
  g.src = to_host ? kEveryDevice : -1;
  g.dst = to_host ? -1 : kEveryDevice;
  g.total = g.doubled_others = true;
  for (int d = 0; d < in.ndevices; ++d)
    g.legs.push_back(to_host ? CopyLeg{d, -1, {}} : CopyLeg{-1, d, {}});
  out.push_back(std::move(g));
  if (!in.cfg.bidir) return;
  CopyGroup b = group(in, copy_case::all_host_bidir, false);
  b.src = kEveryDevice;
  b.dst = -1;
  b.both_ways = b.total = b.doubled_others = true;
  for (int d = 0; d < in.ndevices; ++d) {
    b.legs.push_back({d, -1, {}});
    b.legs.push_back({-1, d, {}});
  }
  out.push_back(std::move(b));
}

void plan_all_to_host(const PlanInput& in, std::vector<CopyGroup>& out) {
  plan_all_host(in, true, out);
}
void plan_host_to_all(const PlanInput& in, std::vector<CopyGroup>& out) {
  plan_all_host(in, false, out);
}

// Every other device into one (all_to_one) or one into every other
// (one_to_all), for each device as the one (or -d), each --p2p-op.
void plan_one(const PlanInput& in, bool into, std::vector<CopyGroup>& out) {
  for (P2pOp op : in.cfg.p2p_ops)
    for (int one : in.devices) {
      CopyGroup g =
          group(in, with_op(into ? copy_case::all_to_one : copy_case::one_to_all, op), true);
      g.src = into ? kEveryDevice : one;
      g.dst = into ? one : kEveryDevice;
      g.total = true;
      for (int other = 0; other < in.ndevices; ++other) {
        if (other == one) continue;
        const int s = into ? other : one, d = into ? one : other;
        g.legs.push_back({s, d, driver(s, d, op)});
      }
      out.push_back(std::move(g));
    }
}

void plan_all_to_one(const PlanInput& in, std::vector<CopyGroup>& out) { plan_one(in, true, out); }
void plan_one_to_all(const PlanInput& in, std::vector<CopyGroup>& out) { plan_one(in, false, out); }

// The patterns, in the order `list` and --help show them. One row each.
constexpr CopyPattern kPatterns[] = {
    {copy_case::h2d, "Host to Device Test", "host memory to device memory", 1, false, false, true,
     true, copy_case::host_bidir, "Host to Device and Back at Once Test", plan_h2d},
    {copy_case::d2h, "Device to Host Test", "device memory to host memory", 1, false, false, true,
     true, copy_case::host_bidir, "Host to Device and Back at Once Test", plan_d2h},
    {copy_case::d2d, "Device to Device Test", "within one device's memory", 1, false, false, false,
     true, nullptr, nullptr, plan_d2d},
    {copy_case::p2p, "Peer to Peer Test", "device to device: uni, bidir, local reference", 2, true,
     true, true, false, copy_case::p2p_bidir, "Bidirectional Peer to Peer Test", plan_p2p},
    {copy_case::all_to_host, "All Devices to Host Test",
     "every device to the host at once: each device and the sum", 1, false, false, true, false,
     copy_case::all_host_bidir, "All Devices to and from Host at Once Test", plan_all_to_host},
    {copy_case::host_to_all, "Host to All Devices Test",
     "the host to every device at once: each device and the sum", 1, false, false, true, false,
     copy_case::all_host_bidir, "All Devices to and from Host at Once Test", plan_host_to_all},
    {copy_case::all_to_one, "All Devices to One Test",
     "every other device into one at once: each source and the sum", 2, true, true, false, true,
     nullptr, nullptr, plan_all_to_one},
    {copy_case::one_to_all, "One Device to All Test",
     "one device into every other at once: each destination and the sum", 2, true, true, false,
     true, nullptr, nullptr, plan_one_to_all},
};

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

bool same_group(const CopyGroup& a, const CopyGroup& b) {
  if (a.kase != b.kase || a.src != b.src || a.dst != b.dst || a.legs.size() != b.legs.size())
    return false;
  for (std::size_t i = 0; i < a.legs.size(); ++i)
    if (a.legs[i].src != b.legs[i].src || a.legs[i].dst != b.legs[i].dst ||
        a.legs[i].by != b.legs[i].by)
      return false;
  return true;
}

}  // namespace

const char* to_string(P2pOp op) { return op == P2pOp::read ? "read" : "write"; }

std::string total_case(std::string_view kase) { return std::string(kase) + std::string(kTotal); }

std::string_view summed_case(std::string_view kase) {
  return ends_with(kase, kTotal) ? kase.substr(0, kase.size() - kTotal.size()) : std::string_view{};
}

std::span<const CopyPattern> copy_patterns() { return kPatterns; }

const CopyPattern* find_pattern(std::string_view key) {
  for (const auto& p : kPatterns)
    if (key == p.key) return &p;
  return nullptr;
}

std::string case_title(std::string_view kase) {
  if (const auto base = summed_case(kase); !base.empty()) return case_title(base) + " (sum)";
  if (ends_with(kase, kRead))
    return case_title(kase.substr(0, kase.size() - kRead.size())) +
           " (read: the destination pulls)";
  for (const auto& p : kPatterns) {
    if (kase == p.key) return p.title;
    if (p.bidir_case && kase == p.bidir_case) return p.bidir_title;
  }
  if (kase == "p2p_read_bidir") return "Bidirectional Peer to Peer Test (read)";
  return std::string(kase);
}

std::string pattern_names() {
  std::string out;
  for (const auto& p : kPatterns) out += (out.empty() ? "" : ", ") + std::string(p.key);
  return out;
}

std::string CopyGroup::label() const {
  auto end = [](int d) {
    return d == kEveryDevice ? std::string("all") : d < 0 ? std::string("host") : std::to_string(d);
  };
  return fmt::format("{} {}{}{}", kase, end(src), both_ways ? "<->" : "->", end(dst));
}

Bytes CopyGroup::leg_bytes(Bytes bytes) const {
  return doubled_others && legs.size() > 1 ? 2 * bytes : bytes;
}

Bytes CopyGroup::footprint(int device, Bytes bytes) const {
  Bytes n = 0;
  for (const auto& l : legs) n += leg_bytes(bytes) * ((l.src == device) + (l.dst == device));
  return n;
}

std::vector<CopyBatch> copy_batches(const CopyGroup& g, Bytes n) {
  CopyBatch all;
  all.bytes.assign(g.legs.size(), n);
  all.sum = g.total;
  if (g.leg_bytes(n) == n) {  // one batch: every record
    for (std::size_t i = 0; i < g.legs.size(); ++i) all.legs.push_back(i);
    return {all};
  }
  std::vector<CopyBatch> out;
  if (all.sum) out.push_back(all);
  for (std::size_t i = 0; i < g.legs.size(); ++i) {
    CopyBatch one;
    one.bytes.assign(g.legs.size(), 2 * n);
    one.bytes[i] = n;
    one.legs = {i};
    out.push_back(std::move(one));
  }
  return out;
}

std::vector<CopyGroup> plan_copy(const CopyConfig& cfg, int ndevices) {
  PlanInput in{cfg, ndevices, {}};
  if (cfg.device) {
    in.devices.push_back(*cfg.device);
  } else {
    for (int d = 0; d < ndevices; ++d) in.devices.push_back(d);
  }
  std::vector<CopyGroup> out;
  for (const auto& key : cfg.cases) {
    const CopyPattern* p = find_pattern(key);
    if (!p) continue;  // the CLI refuses unknown names before planning
    std::vector<CopyGroup> mine;
    p->plan(in, mine);
    for (auto& g : mine) {  // h2d and d2h share host_bidir: each group once
      g.pattern = p->key;
      if (std::none_of(out.begin(), out.end(),
                       [&](const CopyGroup& o) { return same_group(o, g); }))
        out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace xb
