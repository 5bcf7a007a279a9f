#pragma once
// Statistics over raw timing samples, in one pure place.
#include <span>

namespace xb {

struct Stats {
  double min = 0, median = 0, mean = 0, max = 0, p99 = 0;
  double cv = 0;  // coefficient of variation: sample stddev / mean
};

// Percentiles interpolate linearly between order statistics. An empty span
// yields all zeros; one sample yields cv 0.
Stats compute_stats(std::span<const double> samples);

// p in [0, 100] of an ascending-sorted span.
double percentile_sorted(std::span<const double> sorted, double p);

}  // namespace xb
