#pragma once
// The chain of a pointer chase (`xferbench latency`): every cache line of a
// buffer holds the address of the next one, in a random order that is one
// cycle through all lines, so each load depends on the one before and the
// prefetchers cannot guess the next. Pure: the backends write the chain into
// their memory from it, the tests check it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/units.hpp"

namespace xb {

// The stride of the chain: one load per cache line.
inline constexpr Bytes kChaseLine = 64;
// The most lines a chain has (successors are 32-bit): 256 GiB of chain.
inline constexpr std::size_t kChaseMaxLines = std::size_t{1} << 32;

// The successor of every line: a random cyclic permutation of 0..lines-1
// (Sattolo's algorithm), so following it from any line visits every line
// once before coming back. Deterministic for a seed. lines >= 1.
std::vector<std::uint32_t> chase_cycle(std::size_t lines, std::uint64_t seed);

// Following `next` from line 0: the steps until the walk first returns to
// line 0, or 0 when it leaves 0..size-1 or does not return within size
// steps. A chain is sound when this equals its size (every line visited).
std::size_t cycle_length(std::span<const std::uint32_t> next);

}  // namespace xb
