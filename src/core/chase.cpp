#include "core/chase.hpp"

#include <numeric>

namespace xb {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

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
