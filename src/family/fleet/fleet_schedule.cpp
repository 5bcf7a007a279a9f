#include "family/fleet/fleet_schedule.hpp"

#include <algorithm>

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

std::vector<FleetStep> fleet_schedule(const std::vector<int>& members, int passes, int concurrency,
                                      std::uint64_t seed) {
  std::vector<FleetStep> steps;
  const int n = static_cast<int>(members.size());
  if (n < 2) return steps;
  const auto rounds = circle_rounds(n);
  for (int p = 0; p < passes; ++p) {
    const std::vector<int> order = pass_order(members, seed, p);
    for (int r = 0; r < static_cast<int>(rounds.size()); ++r) {
      const auto& round = rounds[static_cast<std::size_t>(r)];
      const std::size_t k = concurrency > 0 ? static_cast<std::size_t>(concurrency)
                                            : std::max<std::size_t>(1, round.size());
      for (std::size_t g = 0; g * k < round.size(); ++g) {
        FleetStep s{p, r, static_cast<int>(g), {}};
        for (std::size_t i = g * k; i < std::min(round.size(), (g + 1) * k); ++i)
          s.pairs.push_back({order[static_cast<std::size_t>(round[i].a)],
                             order[static_cast<std::size_t>(round[i].b)]});
        steps.push_back(std::move(s));
      }
    }
  }
  return steps;
}

}  // namespace xb
