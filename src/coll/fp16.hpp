#pragma once
// IEEE binary16 and bfloat16 <-> float, round to nearest even. Inline: the
// MPI reduction operators of half/bf16 call them for every element.
#include <cmath>
#include <cstdint>
#include <cstring>

namespace xb {

inline std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)
    return static_cast<std::uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0));
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // subnormal half (or zero): round |f| * 2^24 to an integer
    const float scaled = std::fabs(f) * 16777216.0f;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(scaled)));
  }
  const std::uint32_t mant = abs & 0x7FFFFFu;
  std::uint32_t h = ((abs >> 23) - 112) << 10 | (mant >> 13);
  const std::uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h;  // nearest even; may carry into the exponent
  return static_cast<std::uint16_t>(sign | h);
}

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  float out;
  if (exp == 0) {
    out = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -out : out;
  }
  const std::uint32_t x =
      exp == 31 ? (sign | 0x7F800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  std::memcpy(&out, &x, 4);
  return out;
}

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

inline float bf16_to_float(std::uint16_t b) {
  const std::uint32_t x = static_cast<std::uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

}  // namespace xb
