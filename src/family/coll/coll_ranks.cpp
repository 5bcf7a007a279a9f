#include "family/coll/coll_ranks.hpp"

#include <algorithm>

namespace xb {
namespace {
double median_of(std::vector<double> v) { return compute_stats(v).median; }
}  // namespace

Straggler find_straggler(const RankTimes& t) {
  Straggler s;
  const std::size_t n = t.iter.size();
  if (n < 2) return s;
  std::size_t iters = t.iter[0].size();
  for (const auto& r : t.iter) iters = std::min(iters, r.size());
  for (const auto& r : t.in_call) iters = std::min(iters, r.size());
  if (iters == 0) return s;
  std::vector<std::vector<double>> own(n, std::vector<double>(iters));
  std::vector<int> slowest_in(n, 0);
  bool split = false;   // some in-call time differs from its iteration: arrivals are seen
  bool differ = false;  // some iteration's own times differ between ranks
  for (std::size_t i = 0; i < iters; ++i) {
    double last_arrival = t.in_call[0][i];
    for (std::size_t r = 1; r < n; ++r) last_arrival = std::min(last_arrival, t.in_call[r][i]);
    std::size_t worst = 0;
    for (std::size_t r = 0; r < n; ++r) {
      own[r][i] = t.iter[r][i] - (t.in_call[r][i] - last_arrival);
      if (own[r][i] > own[worst][i]) worst = r;
      split = split || t.in_call[r][i] != t.iter[r][i];
      differ = differ || own[r][i] != own[0][i];
    }
    ++slowest_in[worst];
  }
  for (const auto& o : own) s.own_us.push_back(median_of(o));
  // Nothing to tell the ranks apart (a device clock timed the whole call,
  // or every rank's own time tied): rank 0 would be named by the tie alone.
  if (!split || !differ) return s;
  const auto worst = static_cast<std::size_t>(std::max_element(s.own_us.begin(), s.own_us.end()) -
                                              s.own_us.begin());
  std::vector<double> others;
  for (std::size_t r = 0; r < n; ++r)
    if (r != worst) others.push_back(s.own_us[r]);
  const double typical = median_of(others);
  s.rank = static_cast<int>(worst);
  s.spread = typical > 0 ? s.own_us[worst] / typical : 1.0;
  s.share = static_cast<double>(slowest_in[worst]) / static_cast<double>(iters);
  return s;
}

bool is_straggler(double spread, double share, int iters) {
  return spread >= kStragglerSpread && share >= 0.5 && iters >= 5;
}

const char* to_string(TimeAgg a) {
  switch (a) {
    case TimeAgg::avg:
      return "avg";
    case TimeAgg::min:
      return "min";
    case TimeAgg::rank0:
      return "rank0";
    default:
      return "max";
  }
}

Stats aggregate(const std::vector<std::vector<double>>& iter, TimeAgg a) {
  if (iter.empty()) return {};
  if (a == TimeAgg::rank0) return compute_stats(iter[0]);
  Stats out = compute_stats(iter[0]);
  double* o[] = {&out.min, &out.median, &out.mean, &out.max, &out.p99, &out.cv};
  for (std::size_t r = 1; r < iter.size(); ++r) {
    const Stats s = compute_stats(iter[r]);
    const double v[] = {s.min, s.median, s.mean, s.max, s.p99, s.cv};
    for (int f = 0; f < 6; ++f)
      *o[f] = a == TimeAgg::max   ? std::max(*o[f], v[f])
              : a == TimeAgg::min ? std::min(*o[f], v[f])
                                  : *o[f] + v[f];
  }
  if (a == TimeAgg::avg)
    for (double* p : o) *p /= static_cast<double>(iter.size());
  return out;
}

}  // namespace xb
