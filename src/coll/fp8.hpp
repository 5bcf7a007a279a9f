#pragma once
// The two 8-bit floating types of NCCL (ncclFloat8e4m3, ncclFloat8e5m2) and
// CUDA (__nv_fp8_e4m3, __nv_fp8_e5m2), the OCP FP8 formats, <-> float:
//   E4M3 ("fn"): bias 7, subnormals, no infinities, NaN only S.1111.111,
//                largest finite 448 (0x7E);
//   E5M2:        bias 15, subnormals, IEEE infinities (S.11111.00) and NaNs,
//                largest finite 57344 (0x7B).
// float -> fp8 rounds to nearest even and does not saturate: what CUDA's
// __nv_cvt_float_to_fp8(x, __NV_NOSAT, ...) gives, bit for bit. A value that
// rounds past the largest finite one (and an infinity) becomes an infinity in
// E5M2 and the NaN S.1111.111 in E4M3, which has no infinity; a NaN becomes
// 0x7F (CUDA's canonical NaN, sign dropped). fp8 -> float is exact (a NaN
// stays NaN). Inline: reduction loops call them per element; constexpr in
// C++20 (std::bit_cast), plain inline where nvcc's C++17 includes them.
#include <cstdint>
#if __cplusplus >= 202002L
#include <bit>
#endif
#if defined(__cpp_lib_bit_cast)
#define XB_FP8_CONSTEXPR constexpr
#else
#include <cstring>
#define XB_FP8_CONSTEXPR inline
#endif

namespace xb {
namespace fp8_detail {

template <class To, class From>
XB_FP8_CONSTEXPR To bits_as(From v) {
  static_assert(sizeof(To) == sizeof(From));
#if defined(__cpp_lib_bit_cast)
  return std::bit_cast<To>(v);
#else
  To out;
  std::memcpy(&out, &v, sizeof out);
  return out;
#endif
}

// A finite |f| (its bits `abs`) rounded to nearest even in a format of M
// mantissa bits, exponent bias B and unbiased exponents up to max_exp: the
// magnitude's bits, which pass the largest finite pattern when |f| rounds
// past it (0x100 where |f| is far past it).
template <int M, int B, int max_exp>
XB_FP8_CONSTEXPR std::uint32_t round_magnitude(std::uint32_t abs) {
  constexpr std::uint32_t min_normal = static_cast<std::uint32_t>(127 + 1 - B) << 23;
  if (abs < min_normal) {  // subnormal (or zero): round |f| * 2^(B-1+M), below 2^M, to an integer
    const float scaled = bits_as<float>(abs) * static_cast<float>(1u << (B - 1 + M));
    std::uint32_t i = static_cast<std::uint32_t>(scaled);
    const float frac = scaled - static_cast<float>(i);   // exact: scaled < 2^M
    if (frac > 0.5f || (frac == 0.5f && (i & 1u))) ++i;  // 2^M is the smallest normal
    return i;
  }
  const int exp = static_cast<int>(abs >> 23) - 127;
  if (exp > max_exp) return 0x100u;
  constexpr int shift = 23 - M;
  const std::uint32_t mant = abs & 0x7FFFFFu;
  std::uint32_t h = static_cast<std::uint32_t>(exp + B) << M | (mant >> shift);
  const std::uint32_t rest = mant & ((1u << shift) - 1u);
  constexpr std::uint32_t half_ulp = 1u << (shift - 1);
  if (rest > half_ulp || (rest == half_ulp && (h & 1u))) ++h;  // may carry into the exponent
  return h;
}

XB_FP8_CONSTEXPR float with_sign(float v, std::uint8_t b) { return (b & 0x80u) ? -v : v; }

}  // namespace fp8_detail

XB_FP8_CONSTEXPR float fp8e4m3_to_float(std::uint8_t b) {
  const std::uint32_t exp = (b >> 3) & 0xFu, mant = b & 0x7u;
  if (exp == 0xFu && mant == 0x7u)
    return fp8_detail::bits_as<float>(static_cast<std::uint32_t>(b & 0x80u) << 24 | 0x7FC00000u);
  if (exp == 0) return fp8_detail::with_sign(static_cast<float>(mant) / 512.0f, b);  // mant * 2^-9
  return fp8_detail::bits_as<float>(static_cast<std::uint32_t>(b & 0x80u) << 24 |
                                    (exp + 120) << 23 | mant << 20);
}

XB_FP8_CONSTEXPR float fp8e5m2_to_float(std::uint8_t b) {
  const std::uint32_t exp = (b >> 2) & 0x1Fu, mant = b & 0x3u;
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  if (exp == 0x1Fu) return fp8_detail::bits_as<float>(sign | (mant ? 0x7FC00000u : 0x7F800000u));
  if (exp == 0) return fp8_detail::with_sign(static_cast<float>(mant) / 65536.0f, b);  // * 2^-16
  return fp8_detail::bits_as<float>(sign | (exp + 112) << 23 | mant << 21);
}

XB_FP8_CONSTEXPR std::uint8_t float_to_fp8e4m3(float f) {
  const std::uint32_t x = fp8_detail::bits_as<std::uint32_t>(f);
  const auto sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return 0x7Fu;                                     // NaN
  if (abs == 0x7F800000u) return static_cast<std::uint8_t>(sign | 0x7Fu);  // no infinity: NaN
  const std::uint32_t h = fp8_detail::round_magnitude<3, 7, 8>(abs);
  return static_cast<std::uint8_t>(sign | (h > 0x7Eu ? 0x7Fu : h));  // past 448: NaN
}

XB_FP8_CONSTEXPR std::uint8_t float_to_fp8e5m2(float f) {
  const std::uint32_t x = fp8_detail::bits_as<std::uint32_t>(f);
  const auto sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return 0x7Fu;  // NaN
  if (abs == 0x7F800000u) return static_cast<std::uint8_t>(sign | 0x7Cu);
  const std::uint32_t h = fp8_detail::round_magnitude<2, 15, 15>(abs);
  return static_cast<std::uint8_t>(sign | (h > 0x7Cu ? 0x7Cu : h));  // past 57344: infinity
}

}  // namespace xb

#undef XB_FP8_CONSTEXPR
