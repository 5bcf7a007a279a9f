#pragma once
// Facts about the machine the run is on, read from the OS.
#include <cstdint>
#include <string>
#include <vector>

namespace xb {

std::string host_name();
std::string cpu_model();  // "AMD EPYC", from /proc/cpuinfo; "unknown" otherwise
int online_cores();
// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();
// MemAvailable from /proc/meminfo in bytes; 0 when unknown.
std::uint64_t available_memory();

}  // namespace xb
