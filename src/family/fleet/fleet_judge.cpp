#include "family/fleet/fleet_judge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/corruption.hpp"

namespace xb {
namespace {

using Grid = std::vector<std::vector<double>>;

Grid grid(int n) {
  return Grid(static_cast<std::size_t>(n),
              std::vector<double>(static_cast<std::size_t>(n), kNotMeasured));
}

double at(const Grid& g, int i, int j) {
  return g[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
}

// Median over passes of each cell; of an even count, the better middle one
// (`upper` for GB/s, the lower for latency): a fault shows in every pass,
// so one disturbed pass of two does not make a cell slow. Flat (cell,
// value) entries sorted once: a 1,024-host matrix is a million cells.
struct Cells {
  int n;
  std::vector<std::pair<std::size_t, double>> v;
  explicit Cells(int n_) : n(n_) {}
  void add(int i, int j, double x) {
    if (!std::isnan(x))
      v.emplace_back(
          static_cast<std::size_t>(i) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j),
          x);
  }
  Grid medians(bool upper) {
    std::sort(v.begin(), v.end());
    Grid g = grid(n);
    for (std::size_t b = 0; b < v.size();) {
      std::size_t e = b;
      while (e < v.size() && v[e].first == v[b].first) ++e;
      const std::size_t c = e - b;
      const std::size_t k = c % 2 ? c / 2 : upper ? c / 2 : c / 2 - 1;
      const auto cell = v[b].first;
      g[cell / static_cast<std::size_t>(n)][cell % static_cast<std::size_t>(n)] = v[b + k].second;
      b = e;
    }
    return g;
  }
};

using Counts = std::vector<std::vector<int>>;

int count_at(const Counts& c, int i, int j) {
  return c.empty() ? 0 : c[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
}

std::string pair_name(const std::vector<std::string>& names, int a, int b) {
  return names[static_cast<std::size_t>(a)] + "<->" + names[static_cast<std::size_t>(b)];
}

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

Finding* find_row(FleetJudgement& j, const std::string& check, const std::string& where) {
  for (; j.rows_indexed < j.findings.size(); ++j.rows_indexed) {
    const Finding& f = j.findings[j.rows_indexed];
    j.row_index.emplace(f.check + '\t' + f.where, j.rows_indexed);
  }
  const auto it = j.row_index.find(check + '\t' + where);
  return it == j.row_index.end() ? nullptr : &j.findings[it->second];
}

// B of a re-measured pair: its weaker direction; 0 when it failed again.
double remeasured(const PairFigures& f) {
  if (f.failed) return 0;
  return std::isnan(f.ab) || std::isnan(f.ba) ? kNotMeasured : std::min(f.ab, f.ba);
}

// Appends a re-measurement to a row's why: the first as "; LEAD: X", the
// rounds after it as ", then X".
void add_again(Finding& f, const std::string& lead, const std::string& what) {
  f.why += f.why.find("; " + lead + ": ") == std::string::npos ? "; " + lead + ": " + what
                                                               : ", then " + what;
}

// What a re-measurement found, for the why: its figure, and its checks
// where it checked transfers of a or of the pair (a, b) and the row is
// about wrong data (a corruption reproduces, or is rare enough to say so).
std::string again_text(double x, const std::vector<PairFigures>& again, int a, int b,
                       bool wrong_row = false) {
  if (x == 0)
    for (const auto& f : again)
      if (f.failed && (f.a == a || f.b == a) && (b < 0 || f.a == b || f.b == b))
        return "no transfer completed (" + f.why + ")";
  std::string out = fmt::format("{:.3g} GB/s", x);
  std::int64_t checked = 0, wrong = 0;
  for (const auto& f : again)
    if ((f.a == a || f.b == a) && (b < 0 || f.a == b || f.b == b)) {
      checked += f.checked;
      wrong += f.wrong;
    }
  if (wrong_row && checked > 0)
    out += fmt::format(", {} of {} checked transfers wrong ({})", wrong, checked,
                       wrong ? "reproduced" : "not reproduced");
  return out;
}

bool wrong_row(const Finding* f) { return f && f->why.rfind("wrong data", 0) == 0; }

bool contains_pair(const std::vector<FleetPair>& v, int a, int b) {
  for (const auto& p : v)
    if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) return true;
  return false;
}

// A suspect that its re-measurement did not confirm becomes a WARN.
void downgrade(FleetJudgement& j, const std::string& check, const std::string& where, double x) {
  if (Finding* f = find_row(j, check, where)) {
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
  const int failures = pair_failures(m, a, b);
  const std::string& an = names[static_cast<std::size_t>(a)];
  const std::string& bn = names[static_cast<std::size_t>(b)];
  if (const auto* w = pair_wrong(m, a, b)) {
    // Wrong data: a FAIL whatever the speed, never cleared (and named once).
    if (contains_pair(j.failing_links, a, b)) return;
    const RateInterval ci = wilson95(w->wrong, w->checked);
    std::string why = fmt::format(
        "wrong data in {} of {} checked transfers ({:.3g} %, 95 % interval {:.3g}-{:.3g} %, "
        "Wilson; first: {})",
        w->wrong, w->checked,
        100.0 * static_cast<double>(w->wrong) / static_cast<double>(w->checked), 100 * ci.lo,
        100 * ci.hi, w->why);
    if (!std::isnan(B) && !std::isnan(ref) && ref > 0)
      why += fmt::format("; its speed {:.3g} GB/s, its ends {:.3g} GB/s with others", B, ref);
    why +=
        ": the path between them corrupts data (NIC, cable, switch port, their error "
        "counters)" +
        after;
    j.slow_links.push_back({a, b});
    j.failing_links.push_back({a, b});
    j.findings.push_back({"link", pair_name(names, a, b), Verdict::fail, std::isnan(B) ? 0 : B,
                          std::isnan(ref) ? 0 : ref, "GB/s", why});
    return;
  }
  if (failures > 0) {
    // Failed transfers: the strongest evidence there is, whatever the other passes reached.
    std::string why = fmt::format("failed in {} of {} passes ({})", failures, pair_passes(m, a, b),
                                  pair_failure_why(m, a, b));
    why += std::isnan(ref) || ref <= 0
               ? std::string()
               : fmt::format("; both ends reach {:.3g} GB/s with others", ref);
    if (!std::isnan(B) && B > 0) why += fmt::format("; the passes that finished: {:.3g} GB/s", B);
    why += ": the path between them (cables, switch ports, routes, a firewall rule)" + after;
    j.slow_links.push_back({a, b});
    j.failing_links.push_back({a, b});
    j.findings.push_back({"link", pair_name(names, a, b), Verdict::fail, std::isnan(B) ? 0 : B,
                          std::isnan(ref) ? 0 : ref, "GB/s", why});
    return;
  }
  if (std::isnan(B) || std::isnan(ref) || ref <= 0) return;
  const Verdict v = grade(B / ref, t.grade.warn_below, t.grade.fail_below);
  if (v == Verdict::pass) return;
  if (v == Verdict::warn && B / ref >= j.link_noise_floor) return;  // within the fleet's spread
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
  const auto size = static_cast<std::size_t>(n);
  Counts passes(size, std::vector<int>(size, 0)), failed = passes;
  std::map<std::pair<int, int>, std::string> why;
  std::map<std::pair<int, int>, FleetMatrix::WrongData> wrong;
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
    const auto a = static_cast<std::size_t>(f.a), b = static_cast<std::size_t>(f.b);
    ++passes[a][b];
    ++passes[b][a];
    if (f.failed) {
      ++failed[a][b];
      ++failed[b][a];
      why.try_emplace({std::min(f.a, f.b), std::max(f.a, f.b)}, f.why);
    }
    if (f.wrong > 0) {
      auto& w = wrong[{std::min(f.a, f.b), std::max(f.a, f.b)}];
      if (w.why.empty()) w.why = f.wrong_why;
      w.wrong += f.wrong;
    }
  }
  for (const auto& f : figures)  // the checked transfers of the pairs with wrong data
    if (auto it = wrong.find({std::min(f.a, f.b), std::max(f.a, f.b)}); it != wrong.end())
      it->second.checked += f.checked;
  return {n,
          send.medians(true),
          both.medians(true),
          p50.medians(false),
          p99.medians(false),
          std::move(passes),
          std::move(failed),
          std::move(why),
          std::move(wrong)};
}

const FleetMatrix::WrongData* pair_wrong(const FleetMatrix& m, int i, int j) {
  const auto it = m.wrong.find({std::min(i, j), std::max(i, j)});
  return it == m.wrong.end() ? nullptr : &it->second;
}

double pair_figure(const FleetMatrix& m, int i, int j) {
  const double x = at(m.send, i, j), y = at(m.send, j, i);
  if (x == 0 || y == 0) return 0;  // a direction that failed in most passes
  if (std::isnan(x) || std::isnan(y)) return kNotMeasured;
  return std::min(x, y);
}

int pair_failures(const FleetMatrix& m, int i, int j) { return count_at(m.failed, i, j); }
int pair_passes(const FleetMatrix& m, int i, int j) { return count_at(m.passes, i, j); }

std::string pair_failure_why(const FleetMatrix& m, int i, int j) {
  const auto it = m.why.find({std::min(i, j), std::max(i, j)});
  return it == m.why.end() ? std::string() : it->second;
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
  if (n < 3) {
    // No host-versus-link rule; a failed pair is still a FAIL of the pair.
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b)
        if (pair_failures(m, a, b) > 0 || pair_wrong(m, a, b))
          judge_link(j, m, names, a, b, kNotMeasured, t, "");
    return j;
  }
  if (std::isnan(R) || R <= 0) {
    int pairs = 0, failed = 0;
    std::string first;
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) {
        pairs += pair_passes(m, a, b) > 0;
        if (pair_failures(m, a, b) > 0 && !failed++) first = pair_failure_why(m, a, b);
      }
    if (failed > 0)
      rows.push_back(
          {"fleet", "pairs", Verdict::fail, static_cast<double>(pairs - failed),
           static_cast<double>(pairs), "pairs",
           fmt::format("{} of {} pairs failed, most hosts with most partners ({}): the fabric, the "
                       "transport or the launcher's network, not one part",
                       failed, pairs, first)});
    for (const auto& [pair, w] : m.wrong)  // wrong data is named whatever else failed
      judge_link(j, m, names, pair.first, pair.second, kNotMeasured, t, "");
    return j;
  }

  // Hosts.
  for (int i = 0; i < n; ++i) {
    const std::string& name = names[static_cast<std::size_t>(i)];
    const double mi = j.typical[static_cast<std::size_t>(i)];
    int with = 0, failing = 0, corrupting = 0;
    std::string first, first_wrong;
    for (int k = 0; k < n; ++k) {
      if (k == i || pair_passes(m, i, k) == 0) continue;
      ++with;
      if (pair_failures(m, i, k) > 0 && !failing++) first = pair_failure_why(m, i, k);
      if (const auto* w = pair_wrong(m, i, k); w && !corrupting++) first_wrong = w->why;
    }
    if (with >= 2 && 2 * corrupting > with) {
      // Wrong data with more than half its partners: the host corrupts, whatever its speed.
      std::string why = fmt::format("wrong data with {} of its {} partners (first: {})", corrupting,
                                    with, first_wrong);
      if (!std::isnan(mi) && mi > 0) why += fmt::format("; typical of its pairs {:.3g} GB/s", mi);
      why += ": its memory, NIC or PCIe path corrupts data";
      j.slow_hosts.push_back(i);
      j.failing_hosts.push_back(i);
      rows.push_back({"host", name, Verdict::fail, std::isnan(mi) ? 0 : mi, R, "GB/s", why});
      continue;
    }
    if (with >= 2 && 2 * failing > with) {
      // Failed with more than half its partners: the host, not each of its links.
      std::string why = fmt::format("failed with {} of its {} partners ({})", failing, with, first);
      if (!std::isnan(mi) && mi > 0) why += fmt::format("; typical of its pairs {:.3g} GB/s", mi);
      why += ": its NIC, cable, switch port, or a firewall or route of its own";
      j.slow_hosts.push_back(i);
      j.failing_hosts.push_back(i);
      rows.push_back({"host", name, Verdict::fail, std::isnan(mi) ? 0 : mi, R, "GB/s", why});
      continue;
    }
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

  // The fleet's own spread of link ratios: with enough links, a WARN must
  // also stand 4 robust sigmas below their median (noise alone puts 5 % of
  // half a million links under 0.8 at a cv of 0.15; a FAIL stays absolute).
  {
    std::vector<double> logs;
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) {
        if (contains(j.slow_hosts, a) || contains(j.slow_hosts, b) || pair_failures(m, a, b))
          continue;
        const double B = pair_figure(m, a, b);
        const double ref = std::min(j.typical[static_cast<std::size_t>(a)],
                                    j.typical[static_cast<std::size_t>(b)]);
        if (!std::isnan(B) && B > 0 && ref > 0) logs.push_back(std::log(B / ref));
      }
    if (logs.size() >= kSpreadLinks) {
      const double med = robust_median(logs, false);
      for (auto& x : logs) x = std::fabs(x - med);
      j.link_noise_floor = std::exp(med - 4 * 1.4826 * robust_median(logs, false));
    }
  }

  // Links between hosts that are not slow themselves.
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      // A slow host hides its links, but not their wrong data (unless the
      // host itself fails for it, or for failed transfers).
      const bool hidden = contains(j.slow_hosts, a) || contains(j.slow_hosts, b);
      if (hidden &&
          (!pair_wrong(m, a, b) || contains(j.failing_hosts, a) || contains(j.failing_hosts, b)))
        continue;
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
  if (j.cleared.size() != j.typical.size()) j.cleared.assign(j.typical.size(), kNotMeasured);
  std::vector<int> hosts;
  for (int h : j.slow_hosts) {
    std::vector<double> xs;
    for (const auto& f : again)
      if (f.a == h || f.b == h) xs.push_back(remeasured(f));
    const double x = robust_median(xs, true);
    const bool failing = contains(j.failing_hosts, h);
    if (failing || (!std::isnan(x) && x / j.reference < t.grade.fail_below)) {
      hosts.push_back(h);
      if (Finding* f = find_row(j, "host", names[static_cast<std::size_t>(h)])) {
        if (!std::isnan(x))
          add_again(*f, "again against the healthiest hosts",
                    again_text(x, again, h, -1, wrong_row(f)));
        if (failing && !std::isnan(x) && x / j.reference >= t.grade.fail_below &&
            f->why.find("intermittent") == std::string::npos && !wrong_row(f))
          f->why += ": intermittent, its failures stand";
      }
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
    const bool failing = contains_pair(j.failing_links, l.a, l.b);
    if (failing || (!std::isnan(x) && x / ref < t.grade.fail_below)) {
      links.push_back(l);
      if (Finding* f = find_row(j, "link", where)) {
        if (!std::isnan(x))
          add_again(*f, "again alone", again_text(x, again, l.a, l.b, wrong_row(f)));
        if (failing && !std::isnan(x) && !(x / ref < t.grade.fail_below) &&
            f->why.find("intermittent") == std::string::npos && !wrong_row(f))
          f->why += ": intermittent, its failures stand";
      }
    } else {
      j.warn_links.push_back(l);
      downgrade(j, "link", where, x);
    }
  }
  j.slow_links = links;
}

void cover_failures(FleetJudgement& j, const std::vector<std::string>& names,
                    const std::vector<PairFigures>& measured) {
  const bool fleet_fails = [&] {
    for (const auto& f : j.findings)
      if (f.check == "fleet" && f.where == "pairs" && f.verdict == Verdict::fail) return true;
    return false;
  }();
  for (const auto& f : measured) {
    if ((!f.failed && f.wrong == 0) || fleet_fails) continue;
    if (contains(j.slow_hosts, f.a) || contains(j.slow_hosts, f.b) ||
        contains_pair(j.slow_links, f.a, f.b))
      continue;
    const std::string where = pair_name(names, std::min(f.a, f.b), std::max(f.a, f.b));
    const std::string what =
        f.failed
            ? "failed when measured again (" + f.why + ")"
            : fmt::format("wrong data when measured again: {} of {} checked transfers (first: {})",
                          f.wrong, f.checked, f.wrong_why);
    if (Finding* row = find_row(j, "link", where)) {
      row->verdict = Verdict::fail;
      row->why += "; it " + what;
    } else {
      j.findings.push_back({"link", where, Verdict::fail, 0, 0, "GB/s",
                            what + ": the path between them (cables, switch ports, routes)"});
    }
    j.warn_links.erase(
        std::remove_if(j.warn_links.begin(), j.warn_links.end(),
                       [&](const FleetPair& p) { return contains_pair({p}, f.a, f.b); }),
        j.warn_links.end());
    j.slow_links.push_back({std::min(f.a, f.b), std::max(f.a, f.b)});
    j.failing_links.push_back(j.slow_links.back());
  }
}

bool PairFilter::keep(const PairFigures& f) {
  const double B = f.failed                               ? 0.0
                   : std::isnan(f.ab) || std::isnan(f.ba) ? kNotMeasured
                                                          : std::min(f.ab, f.ba);
  bool kept = f.failed || f.wrong > 0 || seen_ < kWarm || std::isnan(B) || recent_.empty();
  if (!kept) {
    std::vector<double> v = recent_;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    kept = B < fail_below_ * v[v.size() / 2];
  }
  ++seen_;
  if (!std::isnan(B)) {
    if (recent_.size() < kRecent) {
      recent_.push_back(B);
    } else {
      recent_[pos_] = B;
      pos_ = (pos_ + 1) % kRecent;
    }
  }
  return kept;
}

std::vector<PairFigures> confirm_all(FleetJudgement& j, const FleetMatrix& m,
                                     const std::vector<std::string>& names,
                                     const FleetThresholds& t, const Remeasure& measure) {
  std::vector<PairFigures> all;
  const auto keep = [&](const std::vector<PairFigures>& v) {
    all.insert(all.end(), v.begin(), v.end());
  };
  // The FAILs still open: neither confirmed by failed transfers nor cleared.
  const auto open_links = [&] {
    std::vector<FleetPair> out;
    for (const auto& l : j.slow_links)
      if (!contains_pair(j.failing_links, l.a, l.b)) out.push_back(l);
    return out;
  };
  std::vector<FleetPair> suspects = confirmation_pairs(j);
  for (int k = 0; k < kConfirmRounds; ++k) {
    const auto again = measure(suspects);
    keep(again);
    if (!suspects.empty()) confirm_fleet(j, names, again, t);
    suspects.clear();
    if (k + 1 < kConfirmRounds) {
      FleetJudgement open;  // what confirmation_pairs reads, the open FAILs only
      open.typical = j.typical;
      open.warn_hosts = j.warn_hosts;
      for (int h : j.slow_hosts)
        if (!contains(j.failing_hosts, h)) open.slow_hosts.push_back(h);
      open.slow_links = open_links();
      suspects = confirmation_pairs(open);
    }
  }
  const std::vector<FleetPair> cleared = judge_cleared_links(j, m, names, t);
  suspects = cleared;
  for (int k = 0; k < kConfirmRounds; ++k) {
    const auto again = measure(suspects);
    keep(again);
    if (!suspects.empty()) confirm_links(j, names, suspects, again, t);
    std::vector<FleetPair> next;
    if (k + 1 < kConfirmRounds)
      for (const auto& l : open_links())
        if (contains_pair(suspects, l.a, l.b)) next.push_back(l);
    suspects = next;
  }
  return all;
}

}  // namespace xb
