#include "core/sweep.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace xb {

std::vector<Bytes> expand_sweep(const SweepSpec& spec) {
  if (spec.fixed) return {*spec.fixed};
  if (spec.min == 0 || spec.max == 0) throw UsageError("sweep needs -b MIN and -e MAX, or -s SIZE");
  if (spec.min > spec.max)
    throw UsageError(
        fmt::format("-b {} is larger than -e {}", format_size(spec.min), format_size(spec.max)));
  if (spec.factor != 0 && spec.step != 0) throw UsageError("-f and -i are exclusive");
  if (spec.step == 0 && !(spec.factor > 1.0))
    throw UsageError(fmt::format("-f must be greater than 1 (got {})", spec.factor));

  constexpr std::size_t kMaxSizes = 100000;
  constexpr Bytes kMaxBytes = Bytes{1} << 62;  // sizes stay exact in long double and int64
  if (spec.max > kMaxBytes)
    throw UsageError(fmt::format("-e {}: sizes above {} are not supported", format_size(spec.max),
                                 format_size(kMaxBytes)));
  std::vector<Bytes> sizes;
  long double cur = static_cast<long double>(spec.min);
  // The steps are counted, not only the sizes kept: a factor just above 1
  // repeats one rounded size for a long time. Every size stays in [MIN, MAX]
  // (a step that rounds to MAX from just above it counts; one beyond does not).
  for (std::size_t steps = 0; cur <= static_cast<long double>(spec.max) + 0.5L; ++steps) {
    if (steps >= kMaxSizes)
      throw UsageError(
          fmt::format("sweep has more than {} steps; use a larger -f or -i", kMaxSizes));
    const auto n = static_cast<Bytes>(std::llround(cur));
    if (n <= spec.max && (sizes.empty() || n != sizes.back())) sizes.push_back(n);
    cur = spec.step ? cur + static_cast<long double>(spec.step) : cur * spec.factor;
  }
  return sizes;
}

}  // namespace xb
