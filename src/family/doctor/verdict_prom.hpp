#pragma once
// Verdict records (doctor's rows, fleet's findings) as Prometheus metrics:
// one metric per quantity in its base unit (the table of units below, one
// row per unit a check writes), labels that join with node_exporter and
// dcgm-exporter, the verdict as a value. doctor_prom.cpp; fleet's own
// labels and counts are in fleet/fleet_prom.cpp.
#include <string>

#include "report/prom.hpp"
#include "report/report.hpp"

namespace xb {

// A unit of a verdict record (doctor_field::unit) and the metric it becomes:
// `metric` (and `expected` for the expected figure, "" where a check has
// none), both ending in the base unit; value = figure x times / per (a
// division, so that 7.5 us is 7.5e-06 s, not 7.499999999999999e-06).
struct PromQuantity {
  const char* unit;      // "GB/s"
  const char* metric;    // "bandwidth_bytes_per_second", after "xferbench_<command>_"
  const char* expected;  // "bandwidth_expected_bytes_per_second", or ""
  double times, per;     // GB/s: 1e9, 1; us: 1, 1e6
  const char* help;
};
// The row of `unit`, or null for a unit without one (then only the verdict
// is written: the figure has no metric to go to).
const PromQuantity* prom_quantity(const std::string& unit);
// A figure in `q`'s base unit.
inline double in_base_unit(const PromQuantity& q, double figure) {
  return figure * q.times / q.per;
}

// The labels of doctor's `where` texts ("h2d device 0 dma", "p2p 0->1 core",
// "lane 1 to 10.0.0.2:20000 (nic eth1)", "get 1 MiB rma 0->1", ...):
// direction, method, the device (`gpu` on an accelerator, as dcgm-exporter
// spells it; `device` on the host backend, where a device is a NUMA node)
// and its peer, nic, lane, server, op, bytes, dtype, ranks, variant
// (duplex, near). Words it does not know are left out.
PromLabels where_labels(const std::string& where, bool accelerator);

// PASS 0, WARN 1, FAIL 2; -1 for "-" (nothing to hold it against: no sample).
double verdict_value(const std::string& verdict);

// A verdict record's samples under "xferbench_<command>_": its figure and
// expected figure (prom_quantity), measured / expected (`check_ratio`), and
// its verdict (`check_verdict`), each with `labels`.
void add_verdict_samples(PromText& out, const std::string& command, const Record& rec,
                         const PromLabels& labels);
// What every exposition ends with: xferbench_build_info{command,version,
// revision,backend} 1, the count of FAIL and WARN rows, and the time of
// the run (xferbench_<command>_run_timestamp_seconds).
void add_run_samples(PromText& out, const std::string& command, const Report& r);

}  // namespace xb
