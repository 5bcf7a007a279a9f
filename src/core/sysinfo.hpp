#pragma once
// Facts about the machine the run is on, read from the OS.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xb {

std::string host_name();
std::string cpu_model();  // "AMD EPYC", from /proc/cpuinfo; "unknown" otherwise
int online_cores();
std::string kernel_release();  // uname -r
std::string os_name();         // PRETTY_NAME of /etc/os-release, "unknown" otherwise
// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();
// MemAvailable from /proc/meminfo in bytes; 0 when unknown.
std::uint64_t available_memory();
// The one check of what a size the user gave needs against the memory
// there is, made before anything is allocated, so a size larger than memory
// is a usage error (exit 2) and not std::bad_alloc: "" when `need` fits in
// `avail` (0: unknown, taken to fit), else "WHAT needs NEED WHERE, only
// AVAIL is available" (`where`: " on rank 1", " of device 0's memory").
std::string memory_shortfall(const std::string& what, std::uint64_t need, const std::string& where,
                             std::uint64_t avail);
// The same against available_memory() (host memory).
std::string memory_shortfall(const std::string& what, std::uint64_t need, const std::string& where);

// A network interface as sysfs shows it (/sys/class/net/NAME): up, its
// link rate, and whether a device backs it (a NIC, not a veth or bridge).
struct NetInterface {
  std::string name;
  bool up = false;
  bool physical = false;
  double speed_mbps = 0;  // 0: not reported
};
// Every interface but lo, by name; `root` is the sysfs folder (tests).
std::vector<NetInterface> net_interfaces(const std::string& root = "/sys/class/net");
// The fastest physical interface that is up and reports a rate, Mb/s; 0: none.
double fastest_nic_mbps(const std::vector<NetInterface>& nics);

// CPU time of the whole machine, summed over every CPU, from /proc/stat's
// first line: busy (user, nice, system, irq, softirq, steal) and all of it
// (busy + idle + iowait), in seconds.
struct CpuTimes {
  double busy_s = 0, all_s = 0;
};
// The "cpu " line of /proc/stat's text, ticks of `hz`; nullopt if missing.
std::optional<CpuTimes> parse_proc_stat(const std::string& text, double hz);
// Now, for this machine; zeros when /proc/stat cannot be read.
CpuTimes read_cpu_times();
// This process's user + system time, every thread, and that of its children
// it has waited for (doctor's ranked runs), in seconds (getrusage).
double process_cpu_s();

// What the other processes of the machine did over an interval: the busy
// time of all CPUs less this process's own, per second of wall time, i.e.
// how many cores they kept busy. Never negative.
struct CpuLoad {
  double other_cores = 0;  // cores kept busy by other processes
  double self_cores = 0;   // cores this process used
  double wall_s = 0;
  bool known = false;
};
CpuLoad cpu_load(const CpuTimes& before, const CpuTimes& after, double self_before_s,
                 double self_after_s, double wall_s);

// Measures the load over a region: construct before, `stop()` after.
class LoadMeter {
 public:
  LoadMeter();
  CpuLoad stop() const;

 private:
  CpuTimes cpu_;
  double self_s_, t0_;
};

}  // namespace xb
