#pragma once
// Verification patterns: every byte of a buffer is a pure function of
// (seed, offset), so a copy can be checked without keeping the source.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace xb {

// splitmix64's finalizer of `x` + its increment: a cheap bijective mix, so
// neighbouring words never repeat (patterns) and seeds spread (shuffles).
inline std::uint64_t splitmix64_mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The next number of the splitmix64 generator whose state is `state`: the
// same sequence on every rank and every build.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  const std::uint64_t z = splitmix64_mix(state);
  state += 0x9E3779B97F4A7C15ULL;
  return z;
}

// Fills `out` as if it started at byte `offset` of the pattern stream `seed`.
void fill_pattern(std::span<std::byte> out, std::uint64_t seed, std::uint64_t offset = 0);

// Returns the offset (relative to `data`) of the first byte that differs from
// the pattern, or nullopt when all match.
std::optional<std::size_t> find_mismatch(std::span<const std::byte> data, std::uint64_t seed,
                                         std::uint64_t offset = 0);

// Byte `pos` of the pattern stream `seed`.
std::byte pattern_byte(std::uint64_t seed, std::uint64_t pos);

// Every byte that differs from the pattern: the first one's offset
// (relative to `data`) and how many there are.
struct Mismatches {
  std::optional<std::size_t> first;
  std::size_t count = 0;
};
Mismatches find_mismatches(std::span<const std::byte> data, std::uint64_t seed,
                           std::uint64_t offset = 0);

}  // namespace xb
