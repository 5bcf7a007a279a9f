#include "core/chase.hpp"

#include <numeric>

#include "core/pattern.hpp"

namespace xb {
namespace {

// Nearly uniform in [0, bound): bound < 2^32, so the modulo's bias is below 2^-32.
std::uint64_t below(std::uint64_t& state, std::uint64_t bound) { return splitmix64(state) % bound; }

}  // namespace

std::vector<std::uint32_t> chase_cycle(std::size_t lines, std::uint64_t seed) {
  std::vector<std::uint32_t> next(lines);
  std::iota(next.begin(), next.end(), std::uint32_t{0});
  std::uint64_t state = seed;
  // Sattolo: swapping each position only with an earlier one (never itself)
  // leaves a single cycle, uniformly chosen among the (lines - 1)! of them.
  for (std::size_t i = lines; i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(below(state, i - 1));
    std::swap(next[i - 1], next[j]);
  }
  return next;
}

std::size_t cycle_length(std::span<const std::uint32_t> next) {
  if (next.empty()) return 0;
  std::size_t at = 0;
  for (std::size_t step = 1; step <= next.size(); ++step) {
    at = next[at];
    if (at >= next.size()) return 0;
    if (at == 0) return step;
  }
  return 0;
}

}  // namespace xb
