#pragma once
// doctor's measurements on a node that may be busy: probes (copies run
// together by one copier) sampled in interleaved rounds, the order rotating
// from round to round, so a burst of load lands on both sides of a
// comparison alike; comparisons read the probes round by round and are
// judged on the paired ratios (doctor_checks.hpp: judge).
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "family/doctor/doctor_checks.hpp"

namespace xb {

// One thing doctor measures: `ops` run together by one copier; each run
// gives a GB/s sample per op. Sources hold a pattern, destinations are
// checked after the rounds.
struct Probe {
  std::string label;  // "h2d device 0 dma"
  Copier* copier = nullptr;
  std::vector<CopyOp> ops;
  std::vector<std::uint64_t> seeds;       // per op: the pattern its source holds
  std::vector<std::vector<double>> gbps;  // [op][round]
  bool warmed = false;

  std::size_t rounds() const { return gbps.empty() ? 0 : gbps[0].size(); }
  double sample(std::size_t op, std::size_t round) const { return gbps[op][round]; }
  double sum(std::size_t round) const;  // every op of a round together
  double cv(std::size_t op) const;      // of its GB/s samples
  double worst_cv() const;
  void reset() { gbps.assign(ops.size(), {}); }
};

// Runs `n` rounds over `probes`: each probe once a round (its warm-up runs
// before its first sample), the first probe rotating from round to round.
void run_rounds(const std::vector<Probe*>& probes, int n, int warmup);

// One row doctor judges on paired rounds: per round, the figure measured and
// what it is held against.
struct PairedCheck {
  using At = std::function<std::pair<double, double>(std::size_t round)>;
  using Why = std::function<std::string(Verdict, double measured, double expected, double ratio)>;
  PairedCheck(std::string check_, std::string where_, std::string unit_, Grade grade_,
              std::vector<Probe*> probes_, At at_, Why why_)
      : check(std::move(check_)),
        where(std::move(where_)),
        unit(std::move(unit_)),
        grade(grade_),
        probes(std::move(probes_)),
        at(std::move(at_)),
        why(std::move(why_)) {}
  std::string check, where, unit;
  Grade grade;
  std::vector<Probe*> probes;  // what it reads: re-measured when it fails
  At at;                       // {measured, expected} of a round
  Why why;  // the sentence under a verdict, from the medians and the paired ratio
  bool reference_only = false;  // measured for the record: no verdict
};

struct Judged {
  Judgement judgement;
  double measured = 0, expected = 0;  // medians over the rounds
  double worst_cv = 0;                // of the probes it reads
};
// The rounds every probe of `c` has, judged.
Judged evaluate(const PairedCheck& c);

// How long doctor measures: `first` rounds, then one at a time while the
// time spent on the extra rounds stays under max(factor x the first rounds'
// time, floor_s), at most `max_rounds` in all.
struct Budget {
  int first = 5, warmup = 2;
  double factor = 3, floor_s = 1;
  int max_rounds = 200;
};

// Runs rounds over `probes` until every check of `cs` is settled and every
// probe's CV is within kNoiseLimit, or the budget is spent. Returns the
// rounds run.
int settle(const std::vector<Probe*>& probes, const std::vector<const PairedCheck*>& cs,
           const Budget& b);

// A check measured again on fresh rounds of its own probes (they are reset
// first), within the same budget: what a FAIL must survive (confirm_fail).
Judged remeasure(const PairedCheck& c, const Budget& b);

}  // namespace xb
