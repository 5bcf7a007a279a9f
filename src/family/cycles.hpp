#pragma once
// A run's course in time: cycle after cycle while monitoring, and the stop
// points between two measurements, agreed on every rank.
#include <functional>
#include <vector>

#include "core/record.hpp"
#include "family/options.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// Monitoring (--duration T / --cycles N): `once` runs cycle after cycle,
// its records stamped with the cycle and t_unix (core/journal.hpp), until
// the time is up or the cycles are done (cycles 0: until a stop signal).
// Without either option, `once` runs once, unstamped. With `rt` the ranks
// agree after each cycle whether to go on. Throws UsageError for a bad
// --duration.
std::vector<Record> run_cycles(const RunOptions& opts, Runtime* rt,
                               const std::function<std::vector<Record>()>& once);

// A stop point between two measurements: throws Interrupted (core/journal.hpp)
// once a stop signal came. With `rt` collective: the ranks agree, so a
// signal to any rank stops all of them at the same point.
void stop_point(Runtime* rt);

}  // namespace xb
