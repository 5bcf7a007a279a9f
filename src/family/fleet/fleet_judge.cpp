#include "family/fleet/fleet_judge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace xb {
namespace {

using Grid = std::vector<std::vector<double>>;

Grid grid(int n) {
  return Grid(static_cast<std::size_t>(n),
              std::vector<double>(static_cast<std::size_t>(n), kNotMeasured));
}

double& at(Grid& g, int i, int j) {
  return g[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
}
double at(const Grid& g, int i, int j) {
  return g[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
}

// Median over passes of each cell; of an even count, the better middle one
// (`upper` for GB/s, the lower for latency): a fault shows in every pass,
// so one disturbed pass of two does not make a cell slow.
struct Cells {
  std::vector<std::vector<std::vector<double>>> v;
  explicit Cells(int n)
      : v(static_cast<std::size_t>(n),
          std::vector<std::vector<double>>(static_cast<std::size_t>(n))) {}
  void add(int i, int j, double x) {
    if (!std::isnan(x)) v[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)].push_back(x);
  }
  Grid medians(int n, bool upper) const {
    Grid g = grid(n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        at(g, i, j) =
            robust_median(v[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)], upper);
    return g;
  }
};

std::string pair_name(const std::vector<std::string>& names, int a, int b) {
  return names[static_cast<std::size_t>(a)] + "<->" + names[static_cast<std::size_t>(b)];
}

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

Finding* find_row(std::vector<Finding>& rows, const std::string& check, const std::string& where) {
  for (auto& f : rows)
    if (f.check == check && f.where == where) return &f;
  return nullptr;
}

// B of a re-measured pair: its weaker direction.
double remeasured(const PairFigures& f) {
  return std::isnan(f.ab) || std::isnan(f.ba) ? kNotMeasured : std::min(f.ab, f.ba);
}

// A suspect that its re-measurement did not confirm becomes a WARN.
void downgrade(FleetJudgement& j, const std::string& check, const std::string& where, double x) {
  if (Finding* f = find_row(j.findings, check, where)) {
    f->verdict = Verdict::warn;
    f->why += std::isnan(x) ? "; not measured again: not confirmed"
                            : fmt::format(
                                  "; not reproduced when measured again alone ({:.3g} GB/s): "
                                  "transient or contention",
                                  x);
  }
}

// A link's row against `ref`, the weaker typical figure of its ends; a
// FAIL or WARN goes to j's lists. `after` ends the why (may be empty).
void judge_link(FleetJudgement& j, const FleetMatrix& m, const std::vector<std::string>& names,
                int a, int b, double ref, const FleetThresholds& t, const std::string& after) {
  const double B = pair_figure(m, a, b);
  if (std::isnan(B) || std::isnan(ref) || ref <= 0) return;
  const Verdict v = grade(B / ref, t.grade.warn_below, t.grade.fail_below);
  if (v == Verdict::pass) return;
  const std::string& an = names[static_cast<std::size_t>(a)];
  const std::string& bn = names[static_cast<std::size_t>(b)];
  const double ab = at(m.send, a, b), ba = at(m.send, b, a);
  std::string why = fmt::format(
      "both ends reach {:.3g} GB/s with others; {}->{} {:.3g}, {}->{} {:.3g} GB/s: ", ref, an, bn,
      ab, bn, an, ba);
  const double hi = std::max(ab, ba);
  if (hi > 0 && std::min(ab, ba) / hi < t.grade.warn_below && hi / ref >= t.grade.warn_below)
    why += fmt::format(
        "the path from {} to {} (one direction: a transmit queue, a shaping rule, "
        "one fiber of the pair)",
        ab < ba ? an : bn, ab < ba ? bn : an);
  else
    why += "the path between them (cables, switch ports, routes)";
  why += after;
  (v == Verdict::fail ? j.slow_links : j.warn_links).push_back({a, b});
  j.findings.push_back({"link", pair_name(names, a, b), v, B, ref, "GB/s", why});
}

// A member's typical figure for the link rule: its re-measured one where
// confirmation cleared it.
double link_typical(const FleetJudgement& j, int i) {
  const auto k = static_cast<std::size_t>(i);
  return k < j.cleared.size() && !std::isnan(j.cleared[k]) ? j.cleared[k] : j.typical[k];
}

}  // namespace

double robust_median(std::vector<double> values, bool upper) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double x) { return std::isnan(x); }),
               values.end());
  if (values.empty()) return kNotMeasured;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n % 2) return values[n / 2];
  return upper ? values[n / 2] : values[n / 2 - 1];
}

FleetMatrix fleet_matrix(int n, const std::vector<PairFigures>& figures) {
  Cells send(n), both(n), p50(n), p99(n);
  for (const auto& f : figures) {
    if (f.a < 0 || f.b < 0 || f.a >= n || f.b >= n || f.a == f.b) continue;
    send.add(f.a, f.b, f.ab);
    send.add(f.b, f.a, f.ba);
    both.add(f.a, f.b, f.both);
    both.add(f.b, f.a, f.both);
    p50.add(f.a, f.b, f.p50_us);
    p50.add(f.b, f.a, f.p50_us);
    p99.add(f.a, f.b, f.p99_us);
    p99.add(f.b, f.a, f.p99_us);
  }
  return {n, send.medians(n, true), both.medians(n, true), p50.medians(n, false),
          p99.medians(n, false)};
}

double pair_figure(const FleetMatrix& m, int i, int j) {
  const double x = at(m.send, i, j), y = at(m.send, j, i);
  if (std::isnan(x) || std::isnan(y)) return kNotMeasured;
  return std::min(x, y);
}

std::vector<double> host_typicals(const FleetMatrix& m) {
  std::vector<double> out;
  for (int i = 0; i < m.n; ++i) {
    std::vector<double> b;
    for (int k = 0; k < m.n; ++k)
      if (k != i) b.push_back(pair_figure(m, i, k));
    out.push_back(robust_median(b, true));
  }
  return out;
}

FleetJudgement judge_fleet(const FleetMatrix& m, const std::vector<std::string>& names,
                           double expected_gbps, const std::string& expected_note,
                           const FleetThresholds& t) {
  FleetJudgement j;
  const int n = m.n;
  j.expected = expected_gbps;
  auto& rows = j.findings;
  j.typical = host_typicals(m);
  for (int i = 0; i < n; ++i) {
    std::vector<double> tx, rx, lat;
    for (int k = 0; k < n; ++k) {
      if (k == i) continue;
      tx.push_back(at(m.send, i, k));
      rx.push_back(at(m.send, k, i));
      lat.push_back(at(m.p50, i, k));
    }
    j.tx.push_back(robust_median(tx, true));
    j.rx.push_back(robust_median(rx, true));
    j.latency.push_back(robust_median(lat, false));
  }
  j.reference = robust_median(j.typical, false);
  const double tx_ref = robust_median(j.tx, false), rx_ref = robust_median(j.rx, false);
  j.latency_reference = robust_median(j.latency, false);
  const double R = j.reference;

  // The whole fleet against what its NICs should give.
  if (expected_gbps > 0 && !std::isnan(R)) {
    const double q = R / expected_gbps;
    const Verdict v = grade(q, t.fleet_warn, t.fleet_fail);
    std::string why =
        fmt::format("the hosts' typical pair reaches {:.3g} of {:.3g} GB/s", q, expected_gbps);
    if (v == Verdict::fail)
      why +=
          ": the whole fleet is slow, a configuration problem (the interface, transport or "
          "plugin in use), not one bad part";
    rows.push_back({"fleet", "all", v, R, expected_gbps, "GB/s", why});
  } else {
    rows.push_back({"fleet", "all", Verdict::none, std::isnan(R) ? 0 : R, 0, "GB/s",
                    expected_note.empty() ? "no expected figure" : expected_note});
  }
  if (n < 4)
    rows.push_back({"fleet", "hosts", Verdict::none, static_cast<double>(n), 0, "hosts",
                    n == 2 ? "2 hosts: one pair cannot tell a slow host from a slow link (needs "
                             ">= 4 hosts); judged against the expected figure only"
                           : "3 hosts barely tell a slow host from a slow link (needs >= 4)"});
  if (n < 3 || std::isnan(R) || R <= 0) return j;

  // Hosts.
  for (int i = 0; i < n; ++i) {
    const std::string& name = names[static_cast<std::size_t>(i)];
    const double mi = j.typical[static_cast<std::size_t>(i)];
    if (std::isnan(mi)) {
      rows.push_back({"host", name, Verdict::none, 0, R, "GB/s", "no pair of it was measured"});
      continue;
    }
    const Verdict v = grade(mi / R, t.grade.warn_below, t.grade.fail_below);
    std::string why;
    if (v == Verdict::pass) {
      why = fmt::format("typical of its {} pairs: {:.2f} of the fleet's hosts", n - 1, mi / R);
    } else {
      const double txq = j.tx[static_cast<std::size_t>(i)] / tx_ref;
      const double rxq = j.rx[static_cast<std::size_t>(i)] / rx_ref;
      why = fmt::format("{} ({:.3g} GB/s sending, {:.3g} receiving): ",
                        v == Verdict::fail ? "slow with every partner"
                                           : "below the other hosts with most partners",
                        j.tx[static_cast<std::size_t>(i)], j.rx[static_cast<std::size_t>(i)]);
      // One direction is the cause where it alone is below the warning
      // line, or where both are but it is worse than the other by more than
      // the fail line (a receive fault under noise: 0.04 receiving, 0.78
      // sending; a fault of both ways keeps them alike).
      const bool tx_worse =
          txq < t.grade.warn_below && (rxq >= t.grade.warn_below || txq < rxq * t.grade.fail_below);
      const bool rx_worse =
          rxq < t.grade.warn_below && (txq >= t.grade.warn_below || rxq < txq * t.grade.fail_below);
      if (tx_worse)
        why +=
            "its transmit path (NIC transmit, egress shaping, the cable or port toward the fabric)";
      else if (rx_worse)
        why += "its receive path (NIC receive, ingress policing, the port from the fabric)";
      else
        why += "its NIC, cable, switch port, PCIe slot or NUMA placement";
      (v == Verdict::fail ? j.slow_hosts : j.warn_hosts).push_back(i);
    }
    rows.push_back({"host", name, v, mi, R, "GB/s", why});
  }

  // Links between hosts that are not slow themselves.
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      if (contains(j.slow_hosts, a) || contains(j.slow_hosts, b)) continue;
      judge_link(
          j, m, names, a, b,
          std::min(j.typical[static_cast<std::size_t>(a)], j.typical[static_cast<std::size_t>(b)]),
          t, "");
    }

  // Latency: WARN only (one-way p50 of an 8-byte ping-pong).
  const double L = j.latency_reference;
  if (!std::isnan(L) && L > 0) {
    for (int i = 0; i < n; ++i) {
      const double li = j.latency[static_cast<std::size_t>(i)];
      if (std::isnan(li) || li / L <= t.latency_warn) continue;
      rows.push_back({"latency", names[static_cast<std::size_t>(i)], Verdict::warn, li, L, "us",
                      fmt::format("one-way latency with every partner {:.2f}x the fleet's hosts: "
                                  "its NIC's interrupt moderation, a busy core, or a longer route",
                                  li / L)});
    }
  }
  return j;
}

std::vector<FleetPair> confirmation_pairs(const FleetJudgement& j) {
  std::vector<FleetPair> out = j.slow_links;
  std::vector<int> healthy;
  for (int i = 0; i < static_cast<int>(j.typical.size()); ++i)
    if (!contains(j.slow_hosts, i) && !contains(j.warn_hosts, i) &&
        !std::isnan(j.typical[static_cast<std::size_t>(i)]))
      healthy.push_back(i);
  std::stable_sort(healthy.begin(), healthy.end(), [&](int a, int b) {
    return j.typical[static_cast<std::size_t>(a)] > j.typical[static_cast<std::size_t>(b)];
  });
  for (int h : j.slow_hosts)
    for (std::size_t k = 0; k < std::min<std::size_t>(2, healthy.size()); ++k)
      out.push_back({h, healthy[k]});
  return out;
}

void confirm_fleet(FleetJudgement& j, const std::vector<std::string>& names,
                   const std::vector<PairFigures>& again, const FleetThresholds& t) {
  j.cleared.assign(j.typical.size(), kNotMeasured);
  std::vector<int> hosts;
  for (int h : j.slow_hosts) {
    std::vector<double> xs;
    for (const auto& f : again)
      if (f.a == h || f.b == h) xs.push_back(remeasured(f));
    const double x = robust_median(xs, true);
    if (!std::isnan(x) && x / j.reference < t.grade.fail_below) {
      hosts.push_back(h);
      if (Finding* f = find_row(j.findings, "host", names[static_cast<std::size_t>(h)]))
        f->why += fmt::format("; again against the healthiest hosts: {:.3g} GB/s", x);
    } else {
      j.warn_hosts.push_back(h);
      j.cleared[static_cast<std::size_t>(h)] = x;
      downgrade(j, "host", names[static_cast<std::size_t>(h)], x);
    }
  }
  j.slow_hosts = hosts;
  confirm_links(j, names, std::vector<FleetPair>(j.slow_links), again, t);
}

std::vector<FleetPair> judge_cleared_links(FleetJudgement& j, const FleetMatrix& m,
                                           const std::vector<std::string>& names,
                                           const FleetThresholds& t) {
  const std::size_t before = j.slow_links.size();
  const auto cleared = [&](int i) {
    const auto k = static_cast<std::size_t>(i);
    return k < j.cleared.size() && !std::isnan(j.cleared[k]);
  };
  for (int a = 0; a < m.n; ++a)
    for (int b = a + 1; b < m.n; ++b) {
      // Links of a cleared host with a host that is not slow (a pair of two
      // ordinary hosts was judged by judge_fleet already).
      if (!cleared(a) && !cleared(b)) continue;
      if (contains(j.slow_hosts, a) || contains(j.slow_hosts, b)) continue;
      const int c = cleared(a) ? a : b;
      judge_link(
          j, m, names, a, b, std::min(link_typical(j, a), link_typical(j, b)), t,
          fmt::format("; judged after {} was cleared ({:.3g} GB/s measured again)",
                      names[static_cast<std::size_t>(c)], j.cleared[static_cast<std::size_t>(c)]));
    }
  return {j.slow_links.begin() + static_cast<std::ptrdiff_t>(before), j.slow_links.end()};
}

void confirm_links(FleetJudgement& j, const std::vector<std::string>& names,
                   const std::vector<FleetPair>& suspects, const std::vector<PairFigures>& again,
                   const FleetThresholds& t) {
  std::vector<FleetPair> links;
  for (const auto& l : j.slow_links) {
    if (std::find(suspects.begin(), suspects.end(), l) == suspects.end()) {
      links.push_back(l);
      continue;
    }
    double x = kNotMeasured;
    for (const auto& f : again)
      if ((f.a == l.a && f.b == l.b) || (f.a == l.b && f.b == l.a)) x = remeasured(f);
    const double ref = std::min(link_typical(j, l.a), link_typical(j, l.b));
    const std::string where = pair_name(names, l.a, l.b);
    if (!std::isnan(x) && x / ref < t.grade.fail_below) {
      links.push_back(l);
      if (Finding* f = find_row(j.findings, "link", where))
        f->why += fmt::format("; again alone: {:.3g} GB/s", x);
    } else {
      j.warn_links.push_back(l);
      downgrade(j, "link", where, x);
    }
  }
  j.slow_links = links;
}

}  // namespace xb
