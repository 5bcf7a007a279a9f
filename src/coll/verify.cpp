#include "coll/verify.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace xb {

double input_value(const CollCase& c, int r, std::size_t i) {
  const auto rr = static_cast<std::size_t>(r);
  if (c.dtype == DType::fp8e4m3 || c.dtype == DType::fp8e5m2) {
    // 0..8 are exact in both fp8 formats (E5M2 has 2 mantissa bits: 9 is
    // not); sums of at most one 1 in four ranks stay <= 8 up to 32 ranks,
    // products are powers of two, an average of equal inputs is the input
    // (or, NCCL's where 1/n is not exact in fp8, within fp8_avg_bounds).
    if (!is_reduction(c.op)) return static_cast<double>((rr * 5 + i * 3) % 9);
    switch (c.redop) {
      case RedOp::sum:
        return (i + rr) % 4 == 0 ? 1.0 : 0.0;
      case RedOp::prod:
        return (i + rr) % 4 == 0 ? 2.0 : 1.0;
      case RedOp::avg:
        return static_cast<double>(1u << (i % 4));  // 1, 2, 4, 8 on every rank
      default:
        return static_cast<double>((i * 7 + rr * 3) % 9);
    }
  }
  if (!is_reduction(c.op))
    return static_cast<double>((static_cast<std::size_t>(r) * 31 + i * 7) % 101);
  switch (c.redop) {
    case RedOp::sum:
      return static_cast<double>((i + static_cast<std::size_t>(r)) % 4);  // sum <= 3n
    case RedOp::prod:
      return (i + static_cast<std::size_t>(r)) % 4 == 0 ? 2.0 : 1.0;  // product <= 2^ceil(n/4)
    case RedOp::avg:
      return static_cast<double>(i % 7 + 2 * static_cast<std::size_t>(r));  // average i%7 + n-1
    default:                                                                // min, max
      return static_cast<double>((i * 7 + static_cast<std::size_t>(r) * 3) % 13);
  }
}

double reduced_value(const CollCase& c, std::size_t i) {
  double acc = input_value(c, 0, i);
  for (int r = 1; r < c.nranks; ++r) {
    const double v = input_value(c, r, i);
    switch (c.redop) {
      case RedOp::prod:
        acc *= v;
        break;
      case RedOp::min:
        acc = std::min(acc, v);
        break;
      case RedOp::max:
        acc = std::max(acc, v);
        break;
      default:
        acc += v;
    }
  }
  return c.redop == RedOp::avg ? acc / c.nranks : acc;
}

namespace {

// v rounded to type t (through float, as the fp8 and half conversions take it).
double rounded(DType t, double v) {
  std::uint64_t cell = 0;  // room for any element
  store(t, &cell, 0, v);
  return load(t, &cell, 0);
}

bool is_fp8(DType t) { return t == DType::fp8e4m3 || t == DType::fp8e5m2; }

}  // namespace

Fp8AvgBounds fp8_avg_bounds(DType t, int n, double x) {
  if (n < 1) return {x, x};
  const double scalar = rounded(t, static_cast<float>(1.0 / n));  // NCCL: fp8(float(1/n))
  const double p = rounded(t, rounded(DType::half, x * scalar));  // each rank's scaled input
  // sums[k]: every value a sum of k scaled inputs may take.
  std::vector<std::set<double>> sums(static_cast<std::size_t>(n) + 1);
  sums[1] = {p};
  for (int k = 2; k <= n; ++k) {
    auto& out = sums[static_cast<std::size_t>(k)];
    out.insert(rounded(t, k * p));  // summed wider, rounded once
    for (int i = 1; i <= k / 2; ++i)
      for (const double a : sums[static_cast<std::size_t>(i)])
        for (const double b : sums[static_cast<std::size_t>(k - i)])
          out.insert(rounded(t, rounded(DType::half, a + b)));
  }
  const auto& all = sums[static_cast<std::size_t>(n)];
  return {std::min(*all.begin(), x), std::max(*all.rbegin(), x)};
}

bool receives(const CollCase& c, int rank) {
  return !spec(c.op).root_only_receives || rank == c.root;
}

double expected_value(const CollCase& c, int rank, std::size_t i, const CollCounts& k) {
  return spec(c.op).expected(c, rank, i, k);
}

void fill_inputs(const CollCase& c, int rank, void* send, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) store(c.dtype, send, i, input_value(c, rank, i));
}

std::size_t count_wrong(const CollCase& c, int rank, const void* recv, const CollCounts& k) {
  return find_wrong(c, rank, recv, k).count;
}

WrongElements find_wrong(const CollCase& c, int rank, const void* recv, const CollCounts& k) {
  WrongElements out;
  if (!receives(c, rank)) return out;
  std::size_t& wrong = out.count;
  const auto seen = [&](std::size_t i, double got, double want) {
    if (wrong++) return;
    out.first = i;
    out.got = got;
    out.expected = want;
  };
  const std::size_t n = k.recv_of(rank);
  // fp8 avg: every rank's inputs are equal (input_value), so the expected
  // average is the input, and the bounds depend on it alone: 1, 2, 4 or 8.
  const bool fp8_avg = is_fp8(c.dtype) && is_reduction(c.op) && c.redop == RedOp::avg;
  std::map<double, Fp8AvgBounds> bounds;
  for (std::size_t i = 0; i < n; ++i) {
    // The expectation goes through the same dtype rounding as the data.
    const double got = load(c.dtype, recv, i);
    const double want = rounded(c.dtype, expected_value(c, rank, i, k));
    if (!fp8_avg) {
      if (got != want) seen(i, got, want);
      continue;
    }
    auto it = bounds.find(want);
    if (it == bounds.end())
      it = bounds.emplace(want, fp8_avg_bounds(c.dtype, c.nranks, want)).first;
    if (!(got >= it->second.lo && got <= it->second.hi)) seen(i, got, want);  // NaN too
  }
  return out;
}

}  // namespace xb
