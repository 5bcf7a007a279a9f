#pragma once
// The host clock: steady_clock, in floating-point microseconds.
#include <chrono>

namespace xb {

using Clock = std::chrono::steady_clock;

inline double elapsed_us(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

// Seconds on the steady clock, for deadlines and durations.
inline double now_s() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

}  // namespace xb
