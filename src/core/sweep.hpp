#pragma once
// Size sweeps: a fixed size (-s), or MIN..MAX (-b/-e) multiplied by a factor
// (-f) or advanced by a step (-i), as nccl-tests and ascend-dmi do.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace xb {

struct SweepSpec {
  std::optional<Bytes> fixed;  // -s
  Bytes min = 0;               // -b
  Bytes max = 0;               // -e
  double factor = 0;           // -f (> 1), exclusive with step
  Bytes step = 0;              // -i
};

// Expands the spec into sizes, ascending, MAX included when reached exactly.
// Throws UsageError for a zero MIN or MAX, MIN > MAX, both factor and step,
// factor <= 1, MAX above 2^62 B, or more than 100000 steps (counted before
// rounding: a factor just above 1 repeats one size for many steps).
std::vector<Bytes> expand_sweep(const SweepSpec& spec);

// Told before each step of a long sweep (done < total) and once at the end
// (done == total); what it shows, and where, is the caller's business.
using Progress = std::function<void(std::size_t done, std::size_t total, const std::string& what)>;

}  // namespace xb
