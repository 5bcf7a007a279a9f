#include "family/fleet/fleet_schedule.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "core/pattern.hpp"

namespace xb {

std::vector<std::vector<FleetPair>> circle_rounds(int n) {
  std::vector<std::vector<FleetPair>> rounds;
  if (n < 2) return rounds;
  // An odd n gets a ghost position n: whoever meets it rests that round.
  const int m = n % 2 ? n + 1 : n;
  std::vector<int> pos(static_cast<std::size_t>(m));
  for (int i = 0; i < m; ++i) pos[static_cast<std::size_t>(i)] = i;
  for (int r = 0; r < m - 1; ++r) {
    std::vector<FleetPair> round;
    for (int i = 0; i < m / 2; ++i) {
      const int a = pos[static_cast<std::size_t>(i)];
      const int b = pos[static_cast<std::size_t>(m - 1 - i)];
      if (a < n && b < n) round.push_back(r % 2 ? FleetPair{b, a} : FleetPair{a, b});
    }
    rounds.push_back(std::move(round));
    // Turn every position but the first one step.
    std::rotate(pos.begin() + 1, pos.end() - 1, pos.end());
  }
  return rounds;
}

std::vector<int> pass_order(const std::vector<int>& members, std::uint64_t seed, int pass) {
  std::vector<int> order = members;
  std::uint64_t state = seed ^ (0xa0761d6478bd642fULL * static_cast<std::uint64_t>(pass + 1));
  for (std::size_t i = order.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(splitmix64(state) % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

namespace {

// One round's pairs cut into steps of at most `concurrency` pairs (0: all).
void add_round(std::vector<FleetStep>& steps, int pass, int round,
               const std::vector<FleetPair>& pairs, int concurrency) {
  const std::size_t k = concurrency > 0 ? static_cast<std::size_t>(concurrency)
                                        : std::max<std::size_t>(1, pairs.size());
  for (std::size_t g = 0; g * k < pairs.size(); ++g) {
    FleetStep s{pass, round, static_cast<int>(g), {}};
    for (std::size_t i = g * k; i < std::min(pairs.size(), (g + 1) * k); ++i)
      s.pairs.push_back(pairs[i]);
    steps.push_back(std::move(s));
  }
}

}  // namespace

std::vector<FleetStep> quick_schedule(const std::vector<int>& members, int matchings,
                                      int concurrency, std::uint64_t seed) {
  std::vector<FleetStep> steps;
  if (members.size() < 2) return steps;
  std::set<std::pair<int, int>> met;
  for (int k = 0; k < matchings; ++k) {
    std::vector<FleetPair> round;
    for (int attempt = 0; attempt < 20; ++attempt) {
      const std::vector<int> order =
          pass_order(members, seed ^ 0x9e3779b97f4a7c15ULL, k * 20 + attempt);
      round.clear();
      bool repeats = false;
      for (std::size_t i = 0; i + 1 < order.size(); i += 2) {
        round.push_back({order[i], order[i + 1]});
        repeats = repeats || met.count({std::min(order[i], order[i + 1]),
                                        std::max(order[i], order[i + 1])}) > 0;
      }
      if (!repeats) break;
    }
    for (const auto& p : round) met.insert({std::min(p.a, p.b), std::max(p.a, p.b)});
    add_round(steps, k, 0, round, concurrency);
  }
  return steps;
}

std::vector<FleetStep> fleet_schedule(const std::vector<int>& members, int passes, int concurrency,
                                      std::uint64_t seed) {
  std::vector<FleetStep> steps;
  const int n = static_cast<int>(members.size());
  if (n < 2) return steps;
  const auto rounds = circle_rounds(n);
  for (int p = 0; p < passes; ++p) {
    const std::vector<int> order = pass_order(members, seed, p);
    for (int r = 0; r < static_cast<int>(rounds.size()); ++r) {
      std::vector<FleetPair> pairs;
      for (const auto& q : rounds[static_cast<std::size_t>(r)])
        pairs.push_back(
            {order[static_cast<std::size_t>(q.a)], order[static_cast<std::size_t>(q.b)]});
      add_round(steps, p, r, pairs, concurrency);
    }
  }
  return steps;
}

}  // namespace xb
