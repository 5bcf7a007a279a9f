#pragma once
// `xferbench fleet`'s schedule, pure: every pair of hosts once per pass, in
// rounds of disjoint pairs (the circle method: N-1 rounds of N/2 pairs for
// an even N, N rounds with one host resting for an odd N), the hosts'
// positions shuffled anew each pass (a fixed position would keep one pair
// in the same slot of every pass), and each round cut into groups of at
// most `concurrency` pairs measured at once.
#include <cstdint>
#include <vector>

namespace xb {

struct FleetPair {
  int a = 0, b = 0;  // members (ranks); a sends first
  bool operator==(const FleetPair&) const = default;
};

// The circle method over positions 0..n-1: position 0 stays, the others
// turn. Every unordered pair exactly once; no position twice in a round.
std::vector<std::vector<FleetPair>> circle_rounds(int n);

// `members` in the order of pass `pass`: a Fisher-Yates shuffle driven by
// splitmix64 of (seed, pass), the same on every rank and every build.
std::vector<int> pass_order(const std::vector<int>& members, std::uint64_t seed, int pass);

// One step: the pairs measured at the same time.
struct FleetStep {
  int pass = 0, round = 0, group = 0;
  std::vector<FleetPair> pairs;
};

// Every pass's rounds over the shuffled members, each round cut into
// groups of `concurrency` pairs (0: the whole round at once). Fewer than 2
// members: no steps.
std::vector<FleetStep> fleet_schedule(const std::vector<int>& members, int passes, int concurrency,
                                      std::uint64_t seed);

// `fleet --quick`: `matchings` random perfect matchings of the members
// (an odd count rests one), each a round of its own (pass k, round 0),
// cut into groups as above. A matching repeats no pair of an earlier one
// where 20 reshuffles find one. Every member meets `matchings` partners
// instead of N-1: a slow host shows with all of them, a slow link only
// when it is drawn (the bench measures both, docs/RESULTS.md).
inline constexpr int kQuickMatchings = 4;
std::vector<FleetStep> quick_schedule(const std::vector<int>& members, int matchings,
                                      int concurrency, std::uint64_t seed);

}  // namespace xb
