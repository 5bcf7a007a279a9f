#pragma once
// A cycle counter for "device-side" cycles on the host backend: the TSC on
// x86-64 (constant rate on current CPUs), nanoseconds of steady_clock
// elsewhere. Its rate is measured, not assumed.
#include <cstdint>

namespace xb {

std::uint64_t cycle_counter();
// Counter ticks per second, measured once against steady_clock (~20 ms).
double cycle_counter_hz();
const char* cycle_counter_name();  // "TSC" or "steady_clock ns"

}  // namespace xb
