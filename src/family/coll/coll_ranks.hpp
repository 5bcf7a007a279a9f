#pragma once
// Which rank the others waited for. A collective couples its ranks: every
// rank's iteration ends when the collective does, so each rank's iteration
// times are the same and cannot say who was slow. What differs is how long
// each rank spent inside the library call: the rank that arrived last
// waited least. A rank's own time for iteration i is therefore
//   own[r][i] = iter[r][i] - (in_call[r][i] - min over q of in_call[q][i])
// (its iteration less the time it waited for the last arrival), and the
// slowest rank is the one with the largest median own time. On a device
// stream the calls are timed by the device (in_call == iter): every rank's
// own time is then the same, and no rank is named (rank -1).
#include <string>
#include <vector>

#include "core/stats.hpp"

namespace xb {

struct RankTimes {
  std::vector<std::vector<double>> iter;     // [rank][iteration], us
  std::vector<std::vector<double>> in_call;  // [rank][iteration], us; == iter on a stream
  // Ranks on several hosts: each rank's busiest NIC over the timed calls,
  // "NIC\tTX\tRX\tERRORS" ("" where none moved bytes); empty: not counted.
  std::vector<std::string> nics;
};

struct Straggler {
  int rank = -1;               // the largest median own time; -1 with one rank or no
                               // arrival to tell the ranks apart (in_call == iter)
  double spread = 0;           // its median over the median of the other ranks' medians
  double share = 0;            // fraction of iterations in which it was the slowest
  std::vector<double> own_us;  // each rank's median own time
};

Straggler find_straggler(const RankTimes& t);

// The rule the table names a rank by: at least this spread, the slowest in
// at least half the iterations, over at least 5 iterations. Never on noise:
// below it the fields are still in JSON, without a verdict in the table.
inline constexpr double kStragglerSpread = 1.25;
bool is_straggler(double spread, double share, int iters);

// The statistics of each rank's iterations, combined over the ranks
// (nccl-tests -a): max, avg or min of each statistic, or rank 0's.
enum class TimeAgg { max, avg, min, rank0 };
const char* to_string(TimeAgg a);
Stats aggregate(const std::vector<std::vector<double>>& iter, TimeAgg a);

}  // namespace xb
