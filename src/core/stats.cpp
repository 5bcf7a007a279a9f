#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace xb {

double percentile_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0.0;
  const double pos = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Stats compute_stats(std::span<const double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  s.min = v.front();
  s.max = v.back();
  s.median = percentile_sorted(v, 50.0);
  s.p99 = percentile_sorted(v, 99.0);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  if (v.size() > 1 && s.mean > 0) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.cv = std::sqrt(ss / (n - 1)) / s.mean;
  }
  return s;
}

}  // namespace xb
