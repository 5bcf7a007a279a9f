#pragma once
// Facts about the machine the run is on, read from the OS.
#include <cstdint>
#include <string>

namespace xb {

std::string host_name();
std::string cpu_model();  // "AMD EPYC", from /proc/cpuinfo; "unknown" otherwise
int online_cores();
// MemAvailable from /proc/meminfo in bytes; 0 when unknown.
std::uint64_t available_memory();

}  // namespace xb
