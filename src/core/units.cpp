#include "core/units.hpp"

#include <fmt/format.h>

#include <cctype>
#include <limits>

#include "core/error.hpp"

namespace xb {
namespace {

struct Suffix {
  std::string_view text;
  Bytes mult;
};

// Longest suffixes first so "KIB" is not taken for "B".
constexpr Suffix kSuffixes[] = {
    {"KIB", 1ULL << 10}, {"MIB", 1ULL << 20}, {"GIB", 1ULL << 30},   {"TIB", 1ULL << 40},
    {"KB", 1000ULL},     {"MB", 1000000ULL},  {"GB", 1000000000ULL}, {"TB", 1000000000000ULL},
    {"K", 1ULL << 10},   {"M", 1ULL << 20},   {"G", 1ULL << 30},     {"T", 1ULL << 40},
    {"B", 1ULL},         {"", 1ULL},
};

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Bytes parse_size(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return UsageError(fmt::format("invalid {} '{}': {}", what, text, why));
  };
  if (text.empty()) throw bad("empty");
  if (text.front() == '-') throw bad("must be positive");
  std::size_t i = 0;
  Bytes value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const Bytes digit = static_cast<Bytes>(text[i] - '0');
    if (value > (std::numeric_limits<Bytes>::max() - digit) / 10) throw bad("too large");
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) throw bad("expected a number such as 4096, 4K, 4KiB, 4KB, 1M or 2G");
  const std::string suffix = upper(text.substr(i));
  for (const auto& s : kSuffixes) {
    if (suffix != s.text) continue;
    if (value != 0 && value > std::numeric_limits<Bytes>::max() / s.mult) throw bad("too large");
    if (value == 0) throw bad("must be greater than zero");
    return value * s.mult;
  }
  throw bad("unknown unit (use B, K/KiB, KB, M/MiB, MB, G/GiB, GB, T/TiB, TB)");
}

std::string format_size(Bytes n) {
  constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t u = 0;
  while (u + 1 < std::size(kUnits) && n >= 1024 && n % 1024 == 0) {
    n /= 1024;
    ++u;
  }
  return fmt::format("{} {}", n, kUnits[u]);
}

std::string format_capacity(Bytes n) {
  constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  std::size_t u = 0;
  while (u + 1 < std::size(kUnits) && v >= 1024.0) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.2f} {}", v, kUnits[u]);
}

double gbps(Bytes bytes, double time_us) {
  if (time_us <= 0) return 0.0;
  return static_cast<double>(bytes) / (time_us * 1e3);
}

double messages_per_second(double messages, double time_us) {
  if (time_us <= 0) return 0.0;
  return messages * 1e6 / time_us;
}

}  // namespace xb
