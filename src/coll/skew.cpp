#include "coll/skew.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "core/pattern.hpp"

namespace xb {
namespace {

UsageError bad(const char* option, const std::string& text, const std::string& why) {
  return UsageError(fmt::format("{} {}: {} (uniform, zipf:S or hot:K:F)", option, text, why));
}

// A whole field of `text` as a number; throws `bad` otherwise.
double number(const char* option, const std::string& text, const std::string& field,
              const char* what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(field, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != field.size() || !std::isfinite(v))
    throw bad(option, text, fmt::format("{} '{}' is not a number", what, field));
  return v;
}

// The ranks in popularity order: a seeded Fisher-Yates shuffle.
std::vector<int> popularity(const Skew& s, int n) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::uint64_t state = s.seed;
  for (int i = n - 1; i > 0; --i)
    std::swap(
        order[static_cast<std::size_t>(i)],
        order[static_cast<std::size_t>(splitmix64(state) % static_cast<std::uint64_t>(i + 1))]);
  return order;
}

}  // namespace

Skew parse_skew(const std::string& text, const char* option) {
  std::vector<std::string> f;
  for (std::size_t at = 0;;) {
    const std::size_t colon = text.find(':', at);
    f.push_back(text.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  Skew s;
  if (f[0] == "uniform" && f.size() == 1) return s;
  if (f[0] == "zipf" && f.size() == 2) {
    s.kind = Skew::Kind::zipf;
    s.exponent = number(option, text, f[1], "S");
    if (s.exponent <= 0) throw bad(option, text, "zipf's exponent S must be above 0");
    return s;
  }
  if (f[0] == "hot" && f.size() == 3) {
    s.kind = Skew::Kind::hot;
    const double k = number(option, text, f[1], "K");
    if (k < 1 || k != std::floor(k) || k > 1e6)
      throw bad(option, text, "K must be a whole number >= 1");
    s.hot = static_cast<int>(k);
    s.fraction = number(option, text, f[2], "F");
    if (!(s.fraction > 0 && s.fraction <= 1)) throw bad(option, text, "F must be in (0, 1]");
    return s;
  }
  throw bad(option, text, "unknown form");
}

std::string to_string(const Skew& s) {
  switch (s.kind) {
    case Skew::Kind::zipf:
      return fmt::format("zipf:{}", s.exponent);
    case Skew::Kind::hot:
      return fmt::format("hot:{}:{}", s.hot, s.fraction);
    default:
      return "uniform";
  }
}

void check_skew(const Skew& s, int n) {
  if (s.kind == Skew::Kind::hot && s.hot >= n)
    throw UsageError(fmt::format("--skew {}: K = {} needs more ranks than that (1 <= K < {})",
                                 to_string(s), s.hot, n));
}

std::vector<double> skew_shares(const Skew& s, int n) {
  check_skew(s, n);
  std::vector<double> share(static_cast<std::size_t>(n), 1.0 / n);
  if (s.kind == Skew::Kind::uniform) return share;
  const std::vector<int> order = popularity(s, n);
  double total = 0;
  for (int k = 0; k < n; ++k) {
    const auto d = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
    if (s.kind == Skew::Kind::zipf)
      share[d] = 1.0 / std::pow(k + 1.0, s.exponent);
    else
      share[d] = k < s.hot ? s.fraction / s.hot : (1.0 - s.fraction) / (n - s.hot);
    total += share[d];
  }
  for (double& x : share) x /= total;
  return share;
}

std::vector<std::size_t> pair_counts(const Skew& s, int nranks, std::size_t per_rank) {
  const std::vector<double> share = skew_shares(s, nranks);
  const auto n = static_cast<std::size_t>(nranks);
  // Largest remainder: floors first, then one more to the largest remainders.
  std::vector<std::size_t> row(n);
  std::vector<std::pair<double, std::size_t>> rest;
  std::size_t given = 0;
  for (std::size_t d = 0; d < n; ++d) {
    const double exact = share[d] * static_cast<double>(per_rank);
    row[d] = std::min(per_rank, static_cast<std::size_t>(std::floor(exact)));
    given += row[d];
    rest.emplace_back(exact - static_cast<double>(row[d]), d);
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; given < per_rank; ++i, ++given) ++row[rest[i % n].second];
  while (given > per_rank) {  // floating rounding gave one too many: take from the largest
    --*std::max_element(row.begin(), row.end());
    --given;
  }
  std::vector<std::size_t> counts;
  counts.reserve(n * n);
  for (std::size_t src = 0; src < n; ++src) counts.insert(counts.end(), row.begin(), row.end());
  return counts;
}

}  // namespace xb
