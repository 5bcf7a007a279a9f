#pragma once
// NIC byte and error counters, read from sysfs before and after a
// measurement, so that a record can say how many bytes its NIC carried and
// whether the link counted errors meanwhile. The counters are the host's:
// every process using a NIC adds to them.
//
// Read from: RDMA ports, /sys/class/infiniband/DEV/ports/P/counters (the IB
// port counters; port_xmit_data and port_rcv_data in units of 4 bytes) and
// hw_counters (an EFA port's bytes are there too), and network interfaces,
// /sys/class/net/IF/statistics. XFERBENCH_SYSFS_ROOT stands in for "/" (a
// fake tree, for tests).
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xb {

// One counter as read, and its width where it is known (32, 64; 0: not
// known: the IB port counters are 32 bits on HCAs without the extended ones).
struct NicCounter {
  std::uint64_t value = 0;
  int bits = 0;
};

// A NIC's counters at one moment: a network interface ("eth0") or an RDMA
// port, named as UCX names it ("mlx5_0:1"). Only the byte counters and the
// error-like ones are read.
struct NicSample {
  std::string name;
  std::string kind;  // "ib", "efa", "netdev"; "": found nowhere
  std::map<std::string, NicCounter> counters;
};

// The folder that stands for "/": $XFERBENCH_SYSFS_ROOT, else "".
std::string sysfs_root();

// Samples the NICs named, each a network interface, an RDMA device (each of
// its ports) or one port ("mlx5_0:1", UCX's syntax); no names: every
// interface and RDMA port. A name found nowhere gives a sample of kind ""
// without counters. Never throws: an unreadable file is a missing counter.
std::vector<NicSample> sample_nics(const std::vector<std::string>& names,
                                   const std::string& root = sysfs_root());

// What a NIC moved between two samples, and the error counters that grew.
struct NicDelta {
  std::string nic, kind;
  std::uint64_t tx_bytes = 0, rx_bytes = 0;
  bool bytes_known = false;                                   // both samples had its byte counters
  bool gone = false;                                          // sampled before, not found after
  std::vector<std::pair<std::string, std::uint64_t>> errors;  // name, growth
};

// A counter's growth. One that went back wrapped once: at 2^32 where it is
// 32 bits wide, or its width is unknown and `before` is below 2^32; else
// at 2^64. Pure.
std::uint64_t counter_delta(std::uint64_t before, std::uint64_t after, int bits);

// Each NIC sampled before with counters, against its sample after (by
// name): bytes (IB port data x 4), the error counters that grew; one that
// is not there after is `gone`. Pure.
std::vector<NicDelta> nic_deltas(const std::vector<NicSample>& before,
                                 const std::vector<NicSample>& after);

// The delta of the NIC a lane was given (--nic: a port, an interface, or a
// device, whose ports are summed); nullopt where no bytes were counted.
std::optional<NicDelta> nic_delta_of(const std::vector<NicDelta>& deltas, const std::string& nic);

// The larger of a delta's tx and rx: what a one-way transfer moved.
inline std::uint64_t nic_moved(const NicDelta& d) { return std::max(d.tx_bytes, d.rx_bytes); }

// "symbol_error +412, link_downed +1"; "" when none grew.
std::string nic_errors_text(const NicDelta& d);
// One line: "xb0 tx 16.8 MB rx 0.2 MB", "mlx5_0:1 tx 0.0 MB rx 0.0 MB
// symbol_error +412", "eth1 gone (no counters after)". Decimal MB.
std::string render_nic_delta(const NicDelta& d);

// The NIC that moved the most, where it moved at least half of `expected`
// bytes (a lane given no --nic); nullopt otherwise (shared memory). Pure.
std::optional<NicDelta> busiest_nic(const std::vector<NicDelta>& deltas, std::uint64_t expected);

// A lane given `asked` whose `expected` bytes went through other NICs: the
// asked NIC moved less than 10 % of them and the others that moved at
// least 10 % each moved at least 90 % together. The WARN's text naming
// them, "" otherwise (also where `asked` has no counters). Pure.
std::string other_nic_warning(const std::vector<NicDelta>& deltas, const std::string& asked,
                              std::uint64_t expected);

}  // namespace xb
