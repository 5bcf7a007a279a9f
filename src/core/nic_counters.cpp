#include "core/nic_counters.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace xb {
namespace {

namespace fs = std::filesystem;

// The IB port counters that count errors (IBTA's PortCounters); any other
// counter whose name says error, drop, discard, timeout, retry or a
// retransmission counts too (netdev's rx_crc_errors, EFA's rx_drops,
// mlx5's out_of_sequence, rnr_nak_retry_err).
constexpr std::array<std::string_view, 11> kIbErrors = {"symbol_error",
                                                        "link_downed",
                                                        "link_error_recovery",
                                                        "port_rcv_errors",
                                                        "port_xmit_discards",
                                                        "port_rcv_remote_physical_errors",
                                                        "local_link_integrity_errors",
                                                        "excessive_buffer_overrun_errors",
                                                        "VL15_dropped",
                                                        "port_xmit_constraint_errors",
                                                        "port_rcv_constraint_errors"};
constexpr std::array<std::string_view, 8> kErrorWords = {
    "err", "drop", "discard", "timeout", "retry", "retrans", "out_of_", "duplicate"};

bool error_counter(const std::string& name) {
  for (const auto w : kIbErrors)
    if (name == w) return true;
  for (const auto w : kErrorWords)
    if (name.find(w) != std::string::npos) return true;
  return false;
}

// Byte counters per kind: what is sent, what is received (EFA: its sends
// plus the RDMA bytes it writes and serves to reads; its receives plus the
// bytes it reads and is written).
struct ByteCounters {
  std::vector<std::string_view> tx, rx;
};
const ByteCounters& byte_counters(const std::string& kind) {
  static const ByteCounters ib{{"port_xmit_data"}, {"port_rcv_data"}};
  static const ByteCounters efa{{"tx_bytes", "rdma_write_bytes", "rdma_read_resp_bytes"},
                                {"rx_bytes", "rdma_read_bytes", "rdma_write_recv_bytes"}};
  static const ByteCounters netdev{{"tx_bytes"}, {"rx_bytes"}};
  return kind == "ib" ? ib : kind == "efa" ? efa : netdev;
}
bool byte_counter(const std::string& kind, const std::string& name) {
  const ByteCounters& b = byte_counters(kind);
  for (const auto* v : {&b.tx, &b.rx})
    for (const auto n : *v)
      if (name == n) return true;
  return false;
}

// The byte and error counters of one folder, each `bits` wide.
void read_counters(const fs::path& dir, const std::string& kind, int bits, NicSample& s) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!byte_counter(kind, name) && !error_counter(name)) continue;
    std::ifstream in(it->path());
    std::uint64_t v = 0;
    if (in >> v) s.counters[name] = {v, bits};
  }
}

NicSample sample_port(const fs::path& ib, const std::string& dev, const std::string& port) {
  const fs::path p = ib / dev / "ports" / port;
  std::error_code ec;
  NicSample s{dev + ":" + port, "ib", {}};
  if (!fs::exists(p / "counters/port_xmit_data", ec) && fs::exists(p / "hw_counters/tx_bytes", ec))
    s.kind = "efa";
  read_counters(p / "counters", s.kind, 0, s);
  read_counters(p / "hw_counters", s.kind, 64, s);
  return s;
}

NicSample sample_netdev(const fs::path& net, const std::string& name) {
  NicSample s{name, "netdev", {}};
  read_counters(net / name / "statistics", s.kind, 64, s);
  return s;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// One name of sample_nics: a port, a device's ports, an interface.
void sample_name(const fs::path& ib, const fs::path& net, const std::string& name,
                 std::vector<NicSample>& out) {
  std::error_code ec;
  const auto colon = name.find(':');
  const std::string dev = name.substr(0, colon);
  if (!dev.empty() && dev.find('/') == std::string::npos && dev != "." && dev != "..") {
    if (colon != std::string::npos &&
        fs::is_directory(ib / dev / "ports" / name.substr(colon + 1), ec))
      return out.push_back(sample_port(ib, dev, name.substr(colon + 1)));
    if (colon == std::string::npos && fs::is_directory(ib / dev / "ports", ec)) {
      for (const auto& port : entries(ib / dev / "ports"))
        out.push_back(sample_port(ib, dev, port));
      return;
    }
    if (colon == std::string::npos && fs::is_directory(net / dev / "statistics", ec))
      return out.push_back(sample_netdev(net, dev));
  }
  out.push_back({name, "", {}});
}

std::string mb(std::uint64_t bytes) {
  return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
}

// Whether a sample's name belongs to the NIC a lane was given: itself, or a
// port of the device given.
bool belongs(const std::string& sample, const std::string& nic) {
  return sample == nic || (nic.find(':') == std::string::npos && sample.rfind(nic + ":", 0) == 0);
}

}  // namespace

std::string sysfs_root() {
  const char* v = std::getenv("XFERBENCH_SYSFS_ROOT");
  return v ? std::string(v) : std::string();
}

std::vector<NicSample> sample_nics(const std::vector<std::string>& names, const std::string& root) {
  const fs::path ib = fs::path(root + "/sys/class/infiniband");
  const fs::path net = fs::path(root + "/sys/class/net");
  std::vector<NicSample> out;
  if (!names.empty()) {
    for (const auto& n : names) sample_name(ib, net, n, out);
    return out;
  }
  for (const auto& dev : entries(ib))
    for (const auto& port : entries(ib / dev / "ports")) out.push_back(sample_port(ib, dev, port));
  std::error_code ec;
  for (const auto& dev : entries(net))
    if (fs::is_directory(net / dev / "statistics", ec)) out.push_back(sample_netdev(net, dev));
  return out;
}

std::uint64_t counter_delta(std::uint64_t before, std::uint64_t after, int bits) {
  if (after >= before) return after - before;
  constexpr std::uint64_t k32 = 1ULL << 32;
  if (bits == 32 || (bits == 0 && before < k32)) return (k32 - before) + after;
  return after - before;  // unsigned arithmetic: modulo 2^64
}

std::vector<NicDelta> nic_deltas(const std::vector<NicSample>& before,
                                 const std::vector<NicSample>& after) {
  std::vector<NicDelta> out;
  for (const NicSample& b : before) {
    if (b.counters.empty()) continue;
    NicDelta d{b.name, b.kind, 0, 0, false, false, {}};
    const NicSample* a = nullptr;
    for (const NicSample& x : after)
      if (x.name == b.name && !x.counters.empty()) a = &x;
    if (!a) {
      d.gone = true;
      out.push_back(std::move(d));
      continue;
    }
    const auto grew = [&](const std::string& name) -> std::optional<std::uint64_t> {
      const auto i = b.counters.find(name), j = a->counters.find(name);
      if (i == b.counters.end() || j == a->counters.end()) return std::nullopt;
      return counter_delta(i->second.value, j->second.value, i->second.bits);
    };
    const std::uint64_t unit = b.kind == "ib" ? 4 : 1;
    const ByteCounters& bc = byte_counters(b.kind);
    int found = 0;
    for (const auto& [v, sum] : {std::pair{&bc.tx, &d.tx_bytes}, std::pair{&bc.rx, &d.rx_bytes}})
      for (const auto n : *v)
        if (const auto g = grew(std::string(n))) {
          *sum += *g * unit;
          found += n == v->front() ? 1 : 0;
        }
    d.bytes_known = found == 2;
    for (const auto& [name, c] : b.counters)
      if (error_counter(name) && !byte_counter(b.kind, name))
        if (const auto g = grew(name); g && *g > 0) d.errors.emplace_back(name, *g);
    out.push_back(std::move(d));
  }
  return out;
}

std::optional<NicDelta> nic_delta_of(const std::vector<NicDelta>& deltas, const std::string& nic) {
  std::optional<NicDelta> sum;
  for (const NicDelta& d : deltas) {
    if (!belongs(d.nic, nic) || !d.bytes_known) continue;
    if (!sum) {
      sum = d;
      sum->nic = nic;
      continue;
    }
    sum->tx_bytes += d.tx_bytes;
    sum->rx_bytes += d.rx_bytes;
    for (const auto& [name, n] : d.errors) sum->errors.emplace_back(d.nic + " " + name, n);
  }
  return sum;
}

std::string nic_errors_text(const NicDelta& d) {
  std::string s;
  for (const auto& [name, n] : d.errors)
    s += fmt::format("{}{} +{}", s.empty() ? "" : ", ", name, n);
  return s;
}

std::string render_nic_delta(const NicDelta& d) {
  if (d.gone) return d.nic + " gone (no counters after)";
  std::string s = d.bytes_known
                      ? fmt::format("{} tx {} rx {}", d.nic, mb(d.tx_bytes), mb(d.rx_bytes))
                      : d.nic + " (no byte counters)";
  for (const auto& [name, n] : d.errors) s += fmt::format(" {} +{}", name, n);
  return s;
}

std::optional<NicDelta> busiest_nic(const std::vector<NicDelta>& deltas, std::uint64_t expected) {
  const NicDelta* best = nullptr;
  for (const NicDelta& d : deltas)
    if (d.bytes_known && (!best || nic_moved(d) > nic_moved(*best))) best = &d;
  if (!best || expected == 0 || nic_moved(*best) < expected / 2) return std::nullopt;
  return *best;
}

std::string other_nic_warning(const std::vector<NicDelta>& deltas, const std::string& asked,
                              std::uint64_t expected) {
  const auto mine = nic_delta_of(deltas, asked);
  if (!mine || expected == 0 || nic_moved(*mine) * 10 >= expected) return "";
  std::uint64_t others = 0;
  std::string names;
  for (const NicDelta& d : deltas) {
    if (belongs(d.nic, asked) || !d.bytes_known || nic_moved(d) * 10 < expected) continue;
    others += nic_moved(d);
    names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", d.nic, mb(nic_moved(d)));
  }
  if (others * 10 < expected * 9) return "";
  return fmt::format("nic {} moved {} of the lane's {}: its bytes went through {}", asked,
                     mb(nic_moved(*mine)), mb(expected), names);
}

}  // namespace xb
