#include "family/doctor/doctor_rounds.hpp"

#include <algorithm>

#include "core/stats.hpp"
#include "core/timer.hpp"

namespace xb {

double Probe::sum(std::size_t round) const {
  double s = 0;
  for (const auto& op : gbps) s += op[round];
  return s;
}

double Probe::cv(std::size_t op) const { return compute_stats(gbps[op]).cv; }

double Probe::worst_cv() const {
  double w = 0;
  for (std::size_t k = 0; k < gbps.size(); ++k) w = std::max(w, cv(k));
  return w;
}

void run_rounds(const std::vector<Probe*>& probes, int n, int warmup) {
  const std::size_t np = probes.size();
  if (np == 0) return;
  const std::size_t base = probes[0]->rounds();  // the rotation goes on across calls
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < np; ++i) {
      Probe& p = *probes[(i + base + static_cast<std::size_t>(r)) % np];
      if (p.gbps.size() != p.ops.size()) p.reset();
      if (!p.warmed) {
        for (int w = 0; w < warmup; ++w) p.copier->run(p.ops);
        p.warmed = true;
      }
      const CopyTiming t = p.copier->run(p.ops);
      for (std::size_t k = 0; k < p.ops.size(); ++k)
        p.gbps[k].push_back(static_cast<double>(p.ops[k].bytes) / (t.op_us[k] * 1e3));
    }
  }
}

Judged evaluate(const PairedCheck& c) {
  std::size_t rounds = c.probes.empty() ? 0 : SIZE_MAX;
  Judged out;
  for (const Probe* p : c.probes) {
    rounds = std::min(rounds, p->rounds());
    out.worst_cv = std::max(out.worst_cv, p->worst_cv());
  }
  std::vector<double> m, e, ratios;
  for (std::size_t i = 0; i < rounds; ++i) {
    const auto [mi, ei] = c.at(i);
    m.push_back(mi);
    e.push_back(ei);
    ratios.push_back(ei > 0 ? mi / ei : 0);
  }
  out.judgement = judge(ratios, c.grade);
  out.measured = median_interval(m).median;
  out.expected = median_interval(e).median;
  return out;
}

namespace {

bool settled(const std::vector<Probe*>& probes, const std::vector<const PairedCheck*>& cs) {
  for (const Probe* p : probes)
    if (p->worst_cv() > kNoiseLimit) return false;
  for (const PairedCheck* c : cs)
    if (!c->reference_only && !evaluate(*c).judgement.settled) return false;
  return true;
}

}  // namespace

int settle(const std::vector<Probe*>& probes, const std::vector<const PairedCheck*>& cs,
           const Budget& b) {
  if (probes.empty()) return 0;
  const double t0 = now_s();
  run_rounds(probes, b.first, b.warmup);
  const double budget = std::max(b.factor * (now_s() - t0), b.floor_s);
  const double t1 = now_s();
  int rounds = b.first;
  while (rounds < b.max_rounds && now_s() - t1 < budget && !settled(probes, cs)) {
    run_rounds(probes, 1, b.warmup);
    ++rounds;
  }
  return rounds;
}

Judged remeasure(const PairedCheck& c, const Budget& b) {
  for (Probe* p : c.probes) p->reset();
  settle(c.probes, {&c}, b);
  return evaluate(c);
}

}  // namespace xb
