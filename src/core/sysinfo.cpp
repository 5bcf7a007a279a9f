#include "core/sysinfo.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/timer.hpp"
#include "core/units.hpp"

namespace xb {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string kernel_release() {
  utsname u{};
  return uname(&u) == 0 ? std::string(u.release) : std::string("unknown");
}

std::string os_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
      return v;
    }
  return "unknown";
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    auto v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "unknown";
}

int online_cores() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

std::string memory_shortfall(const std::string& what, std::uint64_t need, const std::string& where,
                             std::uint64_t avail) {
  if (avail == 0 || need <= avail) return "";
  return what + " needs " + format_capacity(need) + where + ", only " + format_capacity(avail) +
         " is available";
}

std::string memory_shortfall(const std::string& what, std::uint64_t need,
                             const std::string& where) {
  return memory_shortfall(what, need, where, need ? available_memory() : 0);
}

std::optional<CpuTimes> parse_proc_stat(const std::string& text, double hz) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::istringstream f(line.substr(4));
    // user nice system idle iowait irq softirq steal (guest is inside user)
    double v[8] = {};
    int n = 0;
    while (n < 8 && f >> v[n]) ++n;
    if (n < 4 || !(hz > 0)) return std::nullopt;
    const double busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    return CpuTimes{busy / hz, (busy + v[3] + v[4]) / hz};
  }
  return std::nullopt;
}

CpuTimes read_cpu_times() {
  std::ifstream in("/proc/stat");
  std::stringstream text;
  text << in.rdbuf();
  const long hz = sysconf(_SC_CLK_TCK);
  return parse_proc_stat(text.str(), hz > 0 ? static_cast<double>(hz) : 100.0).value_or(CpuTimes{});
}

double process_cpu_s() {
  const auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  double total = 0;
  for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    if (getrusage(who, &u) == 0) total += s(u.ru_utime) + s(u.ru_stime);
  }
  return total;
}

CpuLoad cpu_load(const CpuTimes& before, const CpuTimes& after, double self_before_s,
                 double self_after_s, double wall_s) {
  CpuLoad l;
  if (!(wall_s > 0) || !(after.all_s > before.all_s)) return l;
  const double self = std::max(0.0, self_after_s - self_before_s);
  const double busy = std::max(0.0, after.busy_s - before.busy_s);
  l.other_cores = std::max(0.0, busy - self) / wall_s;
  l.self_cores = self / wall_s;
  l.wall_s = wall_s;
  l.known = true;
  return l;
}

LoadMeter::LoadMeter() : cpu_(read_cpu_times()), self_s_(process_cpu_s()), t0_(now_s()) {}

CpuLoad LoadMeter::stop() const {
  return cpu_load(cpu_, read_cpu_times(), self_s_, process_cpu_s(), now_s() - t0_);
}

std::vector<NetInterface> net_interfaces(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<NetInterface> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    NetInterface n;
    n.name = e.path().filename().string();
    if (n.name == "lo") continue;
    const auto read = [&](const char* file) {
      std::ifstream in(e.path() / file);
      std::string v;
      std::getline(in, v);
      return v;
    };
    n.up = read("operstate") == "up";
    n.physical = fs::exists(e.path() / "device", ec);
    try {
      const std::string sp = read("speed");
      n.speed_mbps = sp.empty() ? 0 : std::max(0.0, std::stod(sp));  // -1: unknown
    } catch (const std::exception&) {
      n.speed_mbps = 0;
    }
    out.push_back(n);
  }
  std::sort(out.begin(), out.end(),
            [](const NetInterface& a, const NetInterface& b) { return a.name < b.name; });
  return out;
}

double fastest_nic_mbps(const std::vector<NetInterface>& nics) {
  double best = 0;
  for (const auto& n : nics)
    if (n.up && n.physical) best = std::max(best, n.speed_mbps);
  return best;
}

}  // namespace xb
