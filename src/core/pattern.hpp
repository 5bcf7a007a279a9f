#pragma once
// Verification patterns: every byte of a buffer is a pure function of
// (seed, offset), so a copy can be checked without keeping the source.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace xb {

// Fills `out` as if it started at byte `offset` of the pattern stream `seed`.
void fill_pattern(std::span<std::byte> out, std::uint64_t seed, std::uint64_t offset = 0);

// Returns the offset (relative to `data`) of the first byte that differs from
// the pattern, or nullopt when all match.
std::optional<std::size_t> find_mismatch(std::span<const std::byte> data, std::uint64_t seed,
                                         std::uint64_t offset = 0);

}  // namespace xb
