#include "core/cycles.hpp"

#include <thread>

#include "core/timer.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace xb {

std::uint64_t cycle_counter() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
#endif
}

const char* cycle_counter_name() {
#if defined(__x86_64__)
  return "TSC";
#else
  return "steady_clock ns";
#endif
}

double cycle_counter_hz() {
  static const double hz = [] {
    const auto t0 = Clock::now();
    const auto c0 = cycle_counter();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto c1 = cycle_counter();
    const double us = elapsed_us(t0, Clock::now());
    return static_cast<double>(c1 - c0) / (us * 1e-6);
  }();
  return hz;
}

}  // namespace xb
