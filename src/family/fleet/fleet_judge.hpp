#pragma once
// `xferbench fleet`'s verdicts, pure: from the pair matrix to the slow
// hosts and links. The rules (docs/commands/fleet.md):
// - B(i,j), a pair's figure: the weaker of its two directions (median over
//   iterations, then over passes; of an even count of passes the higher).
// - A host's typical figure m(i): the upper median of B(i,j) over its
//   partners (a host fast with half of them is not blamed for the other
//   half); the fleet's reference R: the median of m(i). Robust while fewer
//   than half the hosts are slow, where a mean or a z-score is not (one slow
//   host spoils N-1 of the pairs).
// - Host: m(i) / R graded (>= warn_below PASS, >= fail_below WARN, else FAIL),
//   with the direction that is slow (its sending or its receiving).
// - Link, only where neither end is slow: B(i,j) / min(m(i), m(j)); from
//   50 links up a WARN must also stand out of the links' own spread.
// - Latency: a host's lower-median one-way p50 over its partners against
//   the fleet's median: above latency_warn times it is a WARN.
// - Whole fleet: R against the expected figure from the NICs' rate; below
//   fleet_fail of it, "the whole fleet is slow", a configuration problem.
// - Fewer than 4 hosts cannot tell a slow host from a slow link: said.
// - A failed pair (no transfer completed within its time box) is a
//   measurement of 0 with a reason, not a hole: its failed direction counts
//   0 in the medians, and a pair that failed in any pass is a FAIL (a link,
//   or its host where the host failed with more than half its partners),
//   with the count of passes; confirmation does not clear it.
// Confirmation (confirm_fleet): a FAIL stays a FAIL only if its
// re-measurement, alone, fails again. A suspect host hides its links from
// the link rule; one that confirmation clears gets its links judged then
// (judge_cleared_links, against its re-measured figure), and those that
// fail are measured alone in a second round (confirm_links).
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "family/doctor/doctor_checks.hpp"
#include "family/fleet/fleet_schedule.hpp"

namespace xb {

inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

// One pair's figures from one step (one pass).
struct PairFigures {
  PairFigures() = default;
  PairFigures(int a_, int b_, double ab_ = kNotMeasured, double ba_ = kNotMeasured,
              double both_ = kNotMeasured, double p50 = kNotMeasured, double p99 = kNotMeasured)
      : a(a_), b(b_), ab(ab_), ba(ba_), both(both_), p50_us(p50), p99_us(p99) {}
  int a = 0, b = 0;              // member indices
  double ab = kNotMeasured;      // GB/s a -> b
  double ba = kNotMeasured;      // GB/s b -> a
  double both = kNotMeasured;    // GB/s both at once (the two directions together)
  double p50_us = kNotMeasured;  // one-way latency of an 8-byte ping-pong
  double p99_us = kNotMeasured;
  // The pair did not finish its step: `why` says where. The direction that
  // failed counts 0 GB/s, a phase it never reached stays NaN.
  bool failed = false;
  std::string why;
  // The error counters that grew on a's and b's NIC during the step
  // ("xb1 rx_errors" -> 3; empty: none): evidence for the verdicts.
  std::map<std::string, std::uint64_t> a_errors, b_errors;
  // A rail's bytes that went through another NIC on a's or b's side: which.
  std::string a_astray, b_astray;
  // The checked transfers of the step (both directions and both at once),
  // those with wrong data, and the first wrong place (core/corruption.hpp).
  std::int64_t checked = 0, wrong = 0;
  std::string wrong_why;
};

// n x n, indexed by member: send[i][j] GB/s from i to j, lat[i][j] the
// one-way p50 (symmetric); NaN where not measured. Medians over passes
// (of an even count the better middle one: the higher GB/s, the lower us).
struct FleetMatrix {
  int n = 0;
  std::vector<std::vector<double>> send, both, p50, p99;
  // Per pair, symmetric: the passes it was measured in, and those it failed in.
  std::vector<std::vector<int>> passes, failed;
  std::map<std::pair<int, int>, std::string> why;  // (lower, higher) member: the first failure
  // (lower, higher) member: its checked transfers over the passes, those
  // with wrong data and the first one's summary; only pairs with wrong data.
  struct WrongData {
    std::int64_t checked = 0, wrong = 0;
    std::string why;
  };
  std::map<std::pair<int, int>, WrongData> wrong;
};
FleetMatrix fleet_matrix(int n, const std::vector<PairFigures>& figures);

// The pair figure B(i,j): min(send[i][j], send[j][i]); 0 when a direction
// failed (its median is 0), NaN when a direction is unmeasured.
double pair_figure(const FleetMatrix& m, int i, int j);

// Passes in which pair (i, j) failed, of those it was measured in; the first reason.
int pair_failures(const FleetMatrix& m, int i, int j);
int pair_passes(const FleetMatrix& m, int i, int j);
std::string pair_failure_why(const FleetMatrix& m, int i, int j);
// Pair (i, j)'s wrong data, or nullptr when every checked transfer was right.
const FleetMatrix::WrongData* pair_wrong(const FleetMatrix& m, int i, int j);

// Each member's typical figure m(i): the upper median of B(i,j) over its partners.
std::vector<double> host_typicals(const FleetMatrix& m);

// Median of the values that are not NaN; `upper` takes the higher of the
// two middle values of an even count, else the lower; NaN for none.
double robust_median(std::vector<double> values, bool upper);

struct FleetThresholds {
  Grade grade{0.8, 0.5};
  double latency_warn = 1.25;  // a host's p50 over the fleet's
  double fleet_fail = 0.5;     // R over the expected figure
  double fleet_warn = 0.8;
};

inline constexpr std::size_t kSpreadLinks = 50;

struct FleetJudgement {
  std::vector<Finding> findings;  // where: member names ("A", "A<->B")
  std::vector<int> slow_hosts;    // FAIL (before confirmation: suspects)
  std::vector<FleetPair> slow_links;
  std::vector<int> warn_hosts;
  std::vector<FleetPair> warn_links;
  // Hosts and links that FAIL on failed transfers: confirmation measures
  // them again for the record, but a failure seen is never cleared.
  std::vector<int> failing_hosts;
  std::vector<FleetPair> failing_links;
  double reference = 0;                          // R, GB/s
  double expected = 0;                           // 0: none
  double latency_reference = 0;                  // us
  std::vector<double> typical, tx, rx, latency;  // per member
  // Per member: the figure of a suspect host that confirmation cleared,
  // measured again against the healthiest hosts (NaN for the others).
  std::vector<double> cleared;
  // A link WARN also needs B / ref below this: 4 robust sigmas under the
  // median link (from kSpreadLinks links up; 1 below that: the 0.8 line alone).
  double link_noise_floor = 1;
  // find_row's index over findings (check + TAB + where -> row).
  std::unordered_map<std::string, std::size_t> row_index;
  std::size_t rows_indexed = 0;
};

// `names[i]` names member i; `expected_gbps` 0 when no figure is known
// (`expected_note` then says why).
FleetJudgement judge_fleet(const FleetMatrix& m, const std::vector<std::string>& names,
                           double expected_gbps, const std::string& expected_note,
                           const FleetThresholds& t);

// What a suspect's re-measurement needs: each FAIL link alone, each FAIL
// host against (up to) the two healthiest hosts that are not suspects.
std::vector<FleetPair> confirmation_pairs(const FleetJudgement& j);

// The re-measured pair figures (B of each confirmation pair) decide: a
// host or link whose re-measurement fails again stays FAIL; one that does
// not becomes a WARN, "not reproduced: transient or contention".
void confirm_fleet(FleetJudgement& j, const std::vector<std::string>& names,
                   const std::vector<PairFigures>& again, const FleetThresholds& t);

// After confirm_fleet: the links of each cleared host, judged now with its
// re-measured figure as its typical one (a slow link of it was hidden
// behind the host's suspicion: the noise that made the host look slow
// need not have touched that link). Adds their rows; returns the new FAIL
// links, to be measured alone and passed to confirm_links.
std::vector<FleetPair> judge_cleared_links(FleetJudgement& j, const FleetMatrix& m,
                                           const std::vector<std::string>& names,
                                           const FleetThresholds& t);

// Confirms `suspects` (FAIL links) on their re-measurements alone, as
// confirm_fleet does; the other entries of j.slow_links stay as they are.
void confirm_links(FleetJudgement& j, const std::vector<std::string>& names,
                   const std::vector<FleetPair>& suspects, const std::vector<PairFigures>& again,
                   const FleetThresholds& t);

// The whole confirmation, as `fleet` runs it: up to kConfirmRounds rounds
// of re-measuring the FAIL hosts and links still standing (each round only
// those the last one confirmed; a part that failed its transfers stands
// without more rounds), then the links of the hosts it cleared, the same
// way. `measure` re-measures a list of pairs and returns their figures; it
// is called exactly 2 x kConfirmRounds times, with an empty list once
// nothing is left (a collective caller keeps its ranks in step). Returns
// every re-measured figure.
inline constexpr int kConfirmRounds = 3;
using Remeasure = std::function<std::vector<PairFigures>(const std::vector<FleetPair>&)>;
std::vector<PairFigures> confirm_all(FleetJudgement& j, const FleetMatrix& m,
                                     const std::vector<std::string>& names,
                                     const FleetThresholds& t, const Remeasure& measure);

// `--matrix flagged`: which pairs keep their records. A pair that failed,
// or whose figure B is below the FAIL line of the recent pairs' median
// (the last 256), keeps them; the first 16 pairs all do (no median yet).
// Every host and link verdict row carries its own figures either way.
class PairFilter {
 public:
  explicit PairFilter(double fail_below) : fail_below_(fail_below) {}
  bool keep(const PairFigures& f);  // then counts f among the recent pairs
  static constexpr std::size_t kRecent = 256, kWarm = 16;

 private:
  double fail_below_;
  std::vector<double> recent_;
  std::size_t pos_ = 0, seen_ = 0;
};

// Last: a failed pair, or one with wrong data, in `measured` (the rounds and
// the confirmations) whose host or link no FAIL names gets a link FAIL row of its own, so the
// verdicts never pass over a failed record (the rules above name them all;
// this holds the invariant against a rule that would not).
void cover_failures(FleetJudgement& j, const std::vector<std::string>& names,
                    const std::vector<PairFigures>& measured);

}  // namespace xb
