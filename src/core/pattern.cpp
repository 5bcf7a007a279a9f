#include "core/pattern.hpp"

#include <cstring>

namespace xb {
namespace {

// splitmix64's mix, so a shifted or stale copy is caught.
std::uint64_t mix(std::uint64_t x) { return splitmix64_mix(x); }

std::byte byte_at(std::uint64_t seed, std::uint64_t pos) {
  const std::uint64_t word = mix(seed * 0x100000001B3ULL ^ (pos / 8));
  return static_cast<std::byte>(word >> ((pos % 8) * 8));
}

}  // namespace

std::byte pattern_byte(std::uint64_t seed, std::uint64_t pos) { return byte_at(seed, pos); }

void fill_pattern(std::span<std::byte> out, std::uint64_t seed, std::uint64_t offset) {
  std::size_t i = 0;
  // Unaligned head, then whole words, then the tail.
  for (; i < out.size() && (offset + i) % 8 != 0; ++i) out[i] = byte_at(seed, offset + i);
  for (; i + 8 <= out.size(); i += 8) {
    const std::uint64_t w = mix(seed * 0x100000001B3ULL ^ ((offset + i) / 8));
    std::memcpy(out.data() + i, &w, 8);  // little-endian byte order matches byte_at
  }
  for (; i < out.size(); ++i) out[i] = byte_at(seed, offset + i);
}

std::optional<std::size_t> find_mismatch(std::span<const std::byte> data, std::uint64_t seed,
                                         std::uint64_t offset) {
  std::size_t i = 0;
  for (; i < data.size() && (offset + i) % 8 != 0; ++i)
    if (data[i] != byte_at(seed, offset + i)) return i;
  for (; i + 8 <= data.size(); i += 8) {
    const std::uint64_t w = mix(seed * 0x100000001B3ULL ^ ((offset + i) / 8));
    if (std::memcmp(data.data() + i, &w, 8) != 0) {
      for (std::size_t j = i; j < i + 8; ++j)
        if (data[j] != byte_at(seed, offset + j)) return j;
    }
  }
  for (; i < data.size(); ++i)
    if (data[i] != byte_at(seed, offset + i)) return i;
  return std::nullopt;
}

Mismatches find_mismatches(std::span<const std::byte> data, std::uint64_t seed,
                           std::uint64_t offset) {
  Mismatches m;
  std::size_t from = 0;
  while (from < data.size()) {
    const auto bad = find_mismatch(data.subspan(from), seed, offset + from);
    if (!bad) break;
    if (!m.first) m.first = from + *bad;
    ++m.count;
    from += *bad + 1;
  }
  return m;
}

}  // namespace xb
