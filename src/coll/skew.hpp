#pragma once
// How alltoallv spreads each rank's elements over the destinations, the
// shape of mixture-of-experts routing: every rank sends the same total, and
// a seeded choice of destinations decides which receive more.
//   uniform   every destination the same share (alltoall's traffic)
//   zipf:S    the destination of popularity k (0 first) gets a share
//             proportional to 1/(k+1)^S, S > 0
//   hot:K:F   K destinations share a fraction F of each rank's elements, the
//             other ranks split the rest evenly (1 <= K < ranks, 0 < F <= 1)
// Which destination has which popularity is one permutation of the ranks,
// the same for every sender (experts popular everywhere), drawn with
// splitmix64 from `seed`: the counts are a pure function of the options.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xb {

struct Skew {
  enum class Kind { uniform, zipf, hot };
  Kind kind = Kind::uniform;
  double exponent = 0;  // zipf's S
  int hot = 0;          // hot's K
  double fraction = 0;  // hot's F
  std::uint64_t seed = 0x5eed;
};

// "uniform", "zipf:1.2", "hot:1:0.5"; throws UsageError naming `option`.
Skew parse_skew(const std::string& text, const char* option = "--skew");
std::string to_string(const Skew& s);
// Throws UsageError when the skew cannot apply to `nranks` ranks (hot's K).
void check_skew(const Skew& s, int nranks);

// Each destination's share of a sender's elements (sums to 1).
std::vector<double> skew_shares(const Skew& s, int nranks);
// Elements each rank sends to each rank, sender-major (`[s * n + d]`): each
// row is `per_rank` elements apportioned over the shares by largest
// remainder (ties to the lower rank), so a row sums to exactly `per_rank`.
std::vector<std::size_t> pair_counts(const Skew& s, int nranks, std::size_t per_rank);

}  // namespace xb
