// `fleet`'s judge at the scale of a large fleet, simulated: synthetic pair
// matrices with measured noise and injected faults, judged and confirmed by
// the code `xferbench fleet` runs (fleet_judge, fleet_schedule), and scored.
//
//   fleet_sim [--hosts 64,256,1024] [--trials 100] [--cv 0.12] [--outliers 0.01]
//             [--quick] [--pair-bytes 700] [--row-bytes 600] [--seed 1]
//
// Noise (per direction of every pair): lognormal with the given coefficient
// of variation, and with probability --outliers a transient dip of the pair
// to 0.2-0.6 of its figure (what a disturbed round looks like); a
// confirmation re-measures with fresh noise. bench/fleet_noise.py takes both
// from fleet JSON files. Faults, every trial, at random places: a slow host
// (both ways), a slow link, an asymmetric link (one direction), a dead link
// (failed in every pass: a figure of 0 with a reason), and two slow links
// sharing a host; slow means 0.05-0.25 of the figure (at most half the FAIL
// line: a link trained down, a NIC at a fraction of its rate). A trial is exact when
// the FAILs after confirmation are exactly the injected parts.
//
// Also: the judge's time (matrix, verdicts, confirmation), the circle
// schedule's modelled time at 25/50/100 GB/s links (64 MiB, 1 warm-up and 5
// timed transfers each way and both at once, 220 pings of 5 us, whole rounds
// at once on a full-bisection fabric; and with one slow host, whose pairs
// take their 5 s box every round: a dead host), and the JSON's size (records of every
// pair, or --matrix flagged's), from measured bytes per record.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "family/fleet/fleet_judge.hpp"
#include "family/fleet/fleet_pairs.hpp"
#include "family/fleet/fleet_schedule.hpp"

namespace {

using namespace xb;

struct Faults {
  std::vector<int> hosts;
  std::vector<FleetPair> links;  // a < b
  // Per directed pair: the factor on its figure (0: dead).
  std::vector<std::tuple<int, int, double>> directed;
};

FleetPair ordered(int a, int b) { return {std::min(a, b), std::max(a, b)}; }

class Model {
 public:
  Model(int n, double cv, double outliers, std::uint64_t seed)
      : n_(n), outliers_(outliers), rng_(seed) {
    const double s2 = std::log(1 + cv * cv);
    noise_ = std::lognormal_distribution<double>(-s2 / 2, std::sqrt(s2));
  }

  // Distinct random places for the faults of one trial.
  Faults place() {
    Faults f;
    std::vector<int> h(static_cast<std::size_t>(n_));
    for (int i = 0; i < n_; ++i) h[static_cast<std::size_t>(i)] = i;
    std::shuffle(h.begin(), h.end(), rng_);
    std::uniform_real_distribution<double> slow(0.05, 0.25);
    const auto both = [&](int a, int b, double x) {
      f.directed.emplace_back(a, b, x);
      f.directed.emplace_back(b, a, x);
    };
    f.hosts = {h[0]};
    slow_host_ = h[0];
    host_factor_ = slow(rng_);
    f.links = {ordered(h[1], h[2]), ordered(h[3], h[4]), ordered(h[5], h[6]), ordered(h[7], h[8]),
               ordered(h[7], h[9])};
    both(h[1], h[2], slow(rng_));                     // slow link
    f.directed.emplace_back(h[3], h[4], slow(rng_));  // asymmetric: one direction
    both(h[5], h[6], 0);                              // dead
    both(h[7], h[8], slow(rng_));                     // two slow links sharing h[7]
    both(h[7], h[9], slow(rng_));
    faults_ = f;
    return f;
  }

  double factor(int a, int b) const {
    double x = a == slow_host_ || b == slow_host_ ? host_factor_ : 1;
    for (const auto& [p, q, y] : faults_.directed)
      if (p == a && q == b) x *= y;
    return x;
  }

  // One measurement of pair (a, b): noise, a transient dip, the faults.
  PairFigures measure(int a, int b) {
    const double dip = u_(rng_) < outliers_ ? 0.2 + 0.4 * u_(rng_) : 1;
    const double fa = factor(a, b), fb = factor(b, a);
    PairFigures f{a, b, kBase * noise_(rng_) * dip * fa, kBase * noise_(rng_) * dip * fb};
    if (fa == 0 || fb == 0) {
      f.failed = true;
      f.ab = fa == 0 ? 0 : f.ab;
      f.ba = fa == 0 ? kNotMeasured : 0;
      f.why = "no answer within the pair's 5 s box (a->b receive)";
    }
    f.both = f.failed ? kNotMeasured : f.ab + f.ba;
    f.p50_us = 5 * noise_(rng_);
    f.p99_us = 2 * f.p50_us;
    return f;
  }

  static constexpr double kBase = 20;  // GB/s

 private:
  int n_;
  double outliers_;
  std::mt19937_64 rng_;
  std::lognormal_distribution<double> noise_;
  std::uniform_real_distribution<double> u_{0, 1};
  Faults faults_;
  int slow_host_ = -1;
  double host_factor_ = 1;
};

struct Score {
  int trials = 0, exact = 0;
  long named = 0, right = 0, injected = 0, warn_healthy = 0, hosts_found = 0;
  std::vector<double> judge_ms;
  long pairs_full = 0, pairs_kept = 0, rows = 0, remeasured = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void trial(int n, bool quick, Model& model, std::uint64_t seed, Score& s) {
  const Faults truth = model.place();
  std::vector<int> members(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) members[static_cast<std::size_t>(i)] = i;
  const auto steps = quick ? quick_schedule(members, kQuickMatchings, 0, seed)
                           : fleet_schedule(members, 1, 0, seed);
  std::vector<PairFigures> figures;
  PairFilter filter(0.5);
  for (const auto& step : steps)
    for (const auto& p : step.pairs) {
      figures.push_back(model.measure(p.a, p.b));
      s.pairs_full += 1;
      s.pairs_kept += filter.keep(figures.back());
    }
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) names.push_back(fmt::format("node{:04d}", i));
  const FleetThresholds t;

  double judged_ms = 0;
  const auto timed = [&](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    judged_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  FleetMatrix m;
  FleetJudgement j;
  timed([&] {
    m = fleet_matrix(n, figures);
    j = judge_fleet(m, names, 0, "simulated", t);
  });
  // confirm_all as the command runs it; the re-measurements (the model's
  // draws) are left out of the judge's time.
  double measuring_ms = 0;
  timed([&] {
    std::vector<PairFigures> all = figures;
    const auto again = confirm_all(j, m, names, t, [&](const std::vector<FleetPair>& pairs) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<PairFigures> out;
      out.reserve(pairs.size());
      for (const auto& p : pairs) out.push_back(model.measure(p.a, p.b));
      s.remeasured += static_cast<long>(pairs.size());
      measuring_ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return out;
    });
    all.insert(all.end(), again.begin(), again.end());
    cover_failures(j, names, all);
  });
  judged_ms -= measuring_ms;
  s.judge_ms.push_back(judged_ms);
  s.rows += static_cast<long>(j.findings.size());

  std::set<std::pair<int, int>> want_links, got_links;
  for (const auto& l : truth.links) want_links.insert({l.a, l.b});
  for (const auto& l : j.slow_links) got_links.insert({std::min(l.a, l.b), std::max(l.a, l.b)});
  const std::set<int> want_hosts(truth.hosts.begin(), truth.hosts.end());
  const std::set<int> got_hosts(j.slow_hosts.begin(), j.slow_hosts.end());
  long right = 0;
  for (int h : got_hosts) right += want_hosts.count(h);
  s.hosts_found += right;
  for (const auto& l : got_links) right += want_links.count(l);
  s.named += static_cast<long>(got_hosts.size() + got_links.size());
  s.right += right;
  s.injected += static_cast<long>(want_hosts.size() + want_links.size());
  s.exact += got_hosts == want_hosts && got_links == want_links;
  if (std::getenv("FLEET_SIM_SHOW") && !(got_hosts == want_hosts && got_links == want_links)) {
    for (const auto& f : j.findings)
      if (f.verdict == Verdict::fail)
        fmt::print(stderr, "  FAIL {} {}: {}\n", f.check, f.where, f.why);
    fmt::print(stderr, "  injected: host node{:04d}; links", truth.hosts[0]);
    for (const auto& l : truth.links) fmt::print(stderr, " node{:04d}<->node{:04d}", l.a, l.b);
    fmt::print(stderr, "\n\n");
  }
  for (int h : j.warn_hosts) s.warn_healthy += !want_hosts.count(h);
  for (const auto& l : j.warn_links)
    s.warn_healthy += !want_links.count({std::min(l.a, l.b), std::max(l.a, l.b)}) &&
                      !want_hosts.count(l.a) && !want_hosts.count(l.b);
  ++s.trials;
}

// The schedule's modelled time, s: per round, the slowest pair's step.
double step_s(double gbps) {
  const double size = 64.0 * 1024 * 1024, transfers = 3 * (1 + 5);
  return transfers * size / (gbps * 1e9) + 220 * 2 * 5e-6;
}

std::string human_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.1f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  return fmt::format("{:.0f} kB", b / 1e3);
}

}  // namespace

namespace {

int run(int argc, char** argv) {
  CLI::App app{"fleet's judge on simulated fleets: precision, recall, time, output size"};
  std::string hosts = "64,256,1024";
  int trials = 100;
  double cv = 0.12, outliers = 0.01, pair_bytes = 700, row_bytes = 600;
  bool quick = false;
  std::uint64_t seed = 1;
  app.add_option("--hosts", hosts, "fleet sizes, comma list");
  app.add_option("--trials", trials, "trials per size")->check(CLI::Range(1, 100000));
  app.add_option("--cv", cv, "noise: coefficient of variation of a direction's figure");
  app.add_option("--outliers", outliers, "noise: probability of a transient dip of a pair");
  app.add_option("--pair-bytes", pair_bytes, "JSON bytes of one pair record (measured)");
  app.add_option("--row-bytes", row_bytes, "JSON bytes of one verdict row (measured)");
  app.add_flag("--quick", quick, "judge fleet --quick's schedule instead of every pair");
  app.add_option("--seed", seed, "the first trial's seed");
  CLI11_PARSE(app, argc, argv);

  fmt::print(
      "fleet_sim: {} schedule, {} trials a size, noise cv {:.3g}, dips {:.3g}, "
      "faults: 1 slow host, 1 slow link, 1 asymmetric, 1 dead, 2 links sharing a host\n\n",
      quick ? "quick (4 random matchings)" : "full (circle, 1 pass)", trials, cv, outliers);
  fmt::print(
      "| hosts | schedule | exact trials | precision | recall | WARN on healthy parts / trial "
      "| slow host found | judge (median, max) | rounds: 25 / 50 / 100 GB/s | a dead host | JSON "
      "full | JSON flagged |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::stringstream in(hosts);
  for (std::string item; std::getline(in, item, ',');) {
    const int n = std::stoi(item);
    if (n < 16) {
      fmt::print(stderr, "fleet_sim: --hosts {}: the faults need at least 16 hosts\n", n);
      return 2;
    }
    Score s;
    for (int k = 0; k < trials; ++k) {
      Model model(n, cv, outliers, seed + static_cast<std::uint64_t>(k) * 7919);
      trial(n, quick, model, seed + static_cast<std::uint64_t>(k), s);
    }
    const int rounds = quick ? kQuickMatchings : (n % 2 ? n : n - 1);
    const double rows_avg = static_cast<double>(s.rows) / s.trials + 2.0 * n;  // + census rows
    const double full =
        static_cast<double>(s.pairs_full) / s.trials * 4 * pair_bytes + rows_avg * row_bytes;
    const double flagged =
        static_cast<double>(s.pairs_kept) / s.trials * 4 * pair_bytes + rows_avg * row_bytes;
    fmt::print(
        "| {} | {} | {:.1f} % | {:.4f} | {:.4f} | {:.2f} | {:.1f} % | {:.0f} ms, {:.0f} ms | "
        "{:.1f} / {:.1f} / {:.1f} s | +{:.0f} s | {} | {} |\n",
        n, quick ? "quick" : "full", 100.0 * s.exact / s.trials,
        s.named ? static_cast<double>(s.right) / static_cast<double>(s.named) : 1.0,
        static_cast<double>(s.right) / static_cast<double>(s.injected),
        static_cast<double>(s.warn_healthy) / s.trials,
        100.0 * static_cast<double>(s.hosts_found) / s.trials, median(s.judge_ms),
        *std::max_element(s.judge_ms.begin(), s.judge_ms.end()), rounds * step_s(25),
        rounds * step_s(50), rounds * step_s(100), rounds * (PairBox::kFloor_s - step_s(25)),
        human_bytes(full), human_bytes(flagged));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "fleet_sim: {}\n", e.what());
    return 2;
  }
}
