// NIC counters (core/nic_counters) read from the fake sysfs tree of
// tests/data/sysfs (an mlx5 port, an EFA port, two interfaces), copied to a
// temporary folder where a test moves the counters between two samples.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/nic_counters.hpp"

namespace xb {
namespace {

namespace fs = std::filesystem;

struct Tree {
  fs::path root;
  explicit Tree(const std::string& name) : root(fs::path(::testing::TempDir()) / name) {
    fs::remove_all(root);
    fs::copy(XFERBENCH_TEST_DATA_DIR "/sysfs", root, fs::copy_options::recursive);
  }
  ~Tree() { fs::remove_all(root); }
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;
  void set(const std::string& rel, std::uint64_t v) const {
    std::ofstream(root / "sys/class" / rel) << v << "\n";
  }
  std::vector<NicSample> sample(const std::vector<std::string>& names = {}) const {
    return sample_nics(names, root.string());
  }
};

const NicSample* find(const std::vector<NicSample>& v, const std::string& name) {
  for (const auto& s : v)
    if (s.name == name) return &s;
  return nullptr;
}
const NicDelta* find(const std::vector<NicDelta>& v, const std::string& name) {
  for (const auto& d : v)
    if (d.nic == name) return &d;
  return nullptr;
}

TEST(NicCounters, EveryNicOfTheTreeWithItsKind) {
  Tree t("xb_nic_all");
  const auto all = t.sample();
  ASSERT_EQ(all.size(), 5u);  // mlx5_0:1, mlx5_0:2, efa_0:1, eth0, eth1
  EXPECT_EQ(find(all, "mlx5_0:1")->kind, "ib");
  EXPECT_EQ(find(all, "efa_0:1")->kind, "efa");
  EXPECT_EQ(find(all, "eth1")->kind, "netdev");
  const auto& ib = find(all, "mlx5_0:1")->counters;
  EXPECT_EQ(ib.at("port_xmit_data").value, 4194304u);  // as read, in 4-byte units
  EXPECT_EQ(ib.at("symbol_error").value, 3u);
  EXPECT_TRUE(ib.count("out_of_sequence"));
  // neither bytes nor errors: not read
  EXPECT_FALSE(ib.count("port_xmit_packets"));
  EXPECT_FALSE(ib.count("rx_write_requests"));
  EXPECT_FALSE(ib.count("np_cnp_sent"));
  EXPECT_EQ(find(all, "eth0")->counters.at("tx_bytes").bits, 64);
  EXPECT_EQ(ib.at("port_xmit_data").bits, 0);  // 32 or 64 bits: the HCA's, not known here
}

TEST(NicCounters, UcxNamesADevicesPortsAndUnknownNames) {
  Tree t("xb_nic_names");
  const auto port = t.sample({"mlx5_0:1"});
  ASSERT_EQ(port.size(), 1u);
  EXPECT_EQ(port[0].name, "mlx5_0:1");
  const auto dev = t.sample({"mlx5_0"});  // every port of the device
  ASSERT_EQ(dev.size(), 2u);
  EXPECT_EQ(dev[1].name, "mlx5_0:2");
  const auto none = t.sample({"mlx5_0:9", "eth7", "../x"});
  ASSERT_EQ(none.size(), 3u);
  for (const auto& s : none) {
    EXPECT_EQ(s.kind, "");
    EXPECT_TRUE(s.counters.empty());
  }
}

TEST(NicCounters, IbPortDataIsInUnitsOfFourBytes) {
  Tree t("xb_nic_x4");
  const auto before = t.sample({"mlx5_0:1"});
  t.set("infiniband/mlx5_0/ports/1/counters/port_xmit_data", 4194304 + 1000000);
  t.set("infiniband/mlx5_0/ports/1/counters/port_rcv_data", 50000 + 25);
  const auto d = nic_deltas(before, t.sample({"mlx5_0:1"}));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].bytes_known);
  EXPECT_EQ(d[0].tx_bytes, 4000000u);
  EXPECT_EQ(d[0].rx_bytes, 100u);
  EXPECT_TRUE(d[0].errors.empty());
  EXPECT_EQ(render_nic_delta(d[0]), "mlx5_0:1 tx 4.0 MB rx 0.0 MB");
}

TEST(NicCounters, A32BitPortCounterWraps) {
  Tree t("xb_nic_wrap32");
  t.set("infiniband/mlx5_0/ports/1/counters/port_xmit_data", 4294967000u);  // 2^32 - 296
  const auto before = t.sample({"mlx5_0:1"});
  t.set("infiniband/mlx5_0/ports/1/counters/port_xmit_data", 704);
  const auto d = nic_deltas(before, t.sample({"mlx5_0:1"}));
  EXPECT_EQ(d.at(0).tx_bytes, (296u + 704u) * 4u);
  EXPECT_EQ(counter_delta(4294967000u, 704, 32), 1000u);
  EXPECT_EQ(counter_delta(10, 4, 32), 4294967290u);
}

TEST(NicCounters, A64BitCounterWrapsAt2To64) {
  Tree t("xb_nic_wrap64");
  const auto before = t.sample({"eth0"});  // tx_bytes 2^64 - 616
  t.set("net/eth0/statistics/tx_bytes", 384);
  t.set("net/eth0/statistics/rx_bytes", 123456789 + 16800000);
  const auto d = nic_deltas(before, t.sample({"eth0"}));
  EXPECT_EQ(d.at(0).tx_bytes, 1000u);
  EXPECT_EQ(d.at(0).rx_bytes, 16800000u);
  // above 2^32 before, width unknown: a 64-bit counter
  EXPECT_EQ(counter_delta(5000000000ULL, 7, 0), 18446744068709551623ULL);
  EXPECT_EQ(counter_delta(100, 40, 0), 4294967236u);  // below 2^32, unknown: 32 bits
  EXPECT_EQ(counter_delta(100, 40, 64), 18446744073709551556ULL);
}

TEST(NicCounters, ErrorCountersThatGrewAreReported) {
  Tree t("xb_nic_errors");
  const auto before = t.sample();
  t.set("infiniband/mlx5_0/ports/1/counters/symbol_error", 3 + 412);
  t.set("infiniband/mlx5_0/ports/1/hw_counters/rnr_nak_retry_err", 2);
  t.set("infiniband/mlx5_0/ports/1/hw_counters/rx_write_requests", 9000);  // traffic, not errors
  t.set("net/eth1/statistics/rx_crc_errors", 5);
  t.set("infiniband/efa_0/ports/1/hw_counters/rx_drops", 1);
  const auto d = nic_deltas(before, t.sample());
  const NicDelta* ib = find(d, "mlx5_0:1");
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(nic_errors_text(*ib), "rnr_nak_retry_err +2, symbol_error +412");
  EXPECT_EQ(render_nic_delta(*ib),
            "mlx5_0:1 tx 0.0 MB rx 0.0 MB rnr_nak_retry_err +2 symbol_error +412");
  EXPECT_EQ(nic_errors_text(*find(d, "eth1")), "rx_crc_errors +5");
  EXPECT_EQ(nic_errors_text(*find(d, "efa_0:1")), "rx_drops +1");
  EXPECT_EQ(nic_errors_text(*find(d, "eth0")), "");
}

TEST(NicCounters, EfaBytesIncludeItsRdmaBytes) {
  Tree t("xb_nic_efa");
  const auto before = t.sample({"efa_0"});
  t.set("infiniband/efa_0/ports/1/hw_counters/rdma_read_bytes", 30000000 + 64000000);
  t.set("infiniband/efa_0/ports/1/hw_counters/rx_bytes", 2000000 + 1000);
  t.set("infiniband/efa_0/ports/1/hw_counters/tx_bytes", 1000000 + 500);
  const auto d = nic_deltas(before, t.sample({"efa_0"}));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].nic, "efa_0:1");
  EXPECT_EQ(d[0].rx_bytes, 64001000u);
  EXPECT_EQ(d[0].tx_bytes, 500u);
}

TEST(NicCounters, ANicThatVanishedIsGoneAndAMissingCounterUnknown) {
  Tree t("xb_nic_gone");
  const auto before = t.sample({"eth0", "eth1", "mlx5_0:2"});
  fs::remove_all(t.root / "sys/class/net/eth1");
  fs::remove(t.root / "sys/class/infiniband/mlx5_0/ports/2/counters/port_rcv_data");
  const auto after = t.sample({"eth0", "eth1", "mlx5_0:2"});
  const auto d = nic_deltas(before, after);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(find(d, "eth1")->gone);
  EXPECT_EQ(render_nic_delta(*find(d, "eth1")), "eth1 gone (no counters after)");
  EXPECT_FALSE(find(d, "mlx5_0:2")->bytes_known);
  EXPECT_FALSE(find(d, "eth0")->gone);
  EXPECT_FALSE(nic_delta_of(d, "eth1"));  // no bytes counted: no fields
  EXPECT_TRUE(nic_delta_of(d, "eth0"));
  // a NIC seen only after has no baseline
  EXPECT_TRUE(nic_deltas(after, before).size() == 2u);
}

TEST(NicCounters, ALaneGivenADeviceSumsItsPorts) {
  Tree t("xb_nic_device");
  const auto before = t.sample();
  t.set("infiniband/mlx5_0/ports/1/counters/port_xmit_data", 4194304 + 250);
  t.set("infiniband/mlx5_0/ports/2/counters/port_xmit_data", 100 + 750);
  const auto d = nic_deltas(before, t.sample());
  const auto dev = nic_delta_of(d, "mlx5_0");
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->nic, "mlx5_0");
  EXPECT_EQ(dev->tx_bytes, 4000u);
  EXPECT_EQ(nic_delta_of(d, "mlx5_0:2")->tx_bytes, 3000u);
  EXPECT_FALSE(nic_delta_of(d, "mlx5_1"));
}

NicDelta moved(const std::string& nic, std::uint64_t tx, std::uint64_t rx) {
  return {nic, "netdev", tx, rx, true, false, {}};
}

TEST(NicCounters, BytesThroughAnotherNicAreNamed) {
  const std::uint64_t lane = 50'000'000;
  // asked xb0 moved nothing, xb1 carried the lane: WARN naming xb1
  const std::vector<NicDelta> other = {moved("xb0", 0, 1200), moved("xb1", 81821, 50832527),
                                       moved("lo", 0, 0)};
  EXPECT_EQ(other_nic_warning(other, "xb0", lane),
            "nic xb0 moved 0.0 MB of the lane's 50.0 MB: its bytes went through xb1 (50.8 MB)");
  // the asked NIC carried them: no WARN
  EXPECT_EQ(other_nic_warning(other, "xb1", lane), "");
  // 10 % on the asked NIC is not "another NIC"
  EXPECT_EQ(other_nic_warning({moved("xb0", 5'000'000, 0), moved("xb1", lane, 0)}, "xb0", lane),
            "");
  EXPECT_NE(other_nic_warning({moved("xb0", 4'999'999, 0), moved("xb1", lane, 0)}, "xb0", lane),
            "");
  // nobody moved them (shared memory): no NIC to name
  EXPECT_EQ(other_nic_warning({moved("xb0", 0, 0), moved("xb1", 10, 0)}, "xb0", lane), "");
  // two others, together: both named
  EXPECT_EQ(
      other_nic_warning({moved("a", 0, 0), moved("b", 0, 30'000'000), moved("c", 26'000'000, 0)},
                        "a", lane),
      "nic a moved 0.0 MB of the lane's 50.0 MB: its bytes went through b (30.0 MB), c (26.0 MB)");
  // the asked NIC's other ports are not "another NIC"; no counters for it: no verdict
  EXPECT_EQ(
      other_nic_warning({moved("mlx5_0:1", 0, 0), moved("mlx5_0:2", 0, lane)}, "mlx5_0", lane), "");
  EXPECT_EQ(other_nic_warning({moved("xb1", 0, lane)}, "xb0", lane), "");
}

TEST(NicCounters, TheBusiestNicOfALaneWithoutNic) {
  const std::vector<NicDelta> d = {moved("eth0", 40'000, 1'000), moved("xb1", 100, 33'000'000)};
  EXPECT_EQ(busiest_nic(d, 64'000'000)->nic, "xb1");
  EXPECT_FALSE(busiest_nic(d, 70'000'000));  // under half the lane's bytes: not its NIC
  EXPECT_FALSE(busiest_nic({}, 1000));
}

}  // namespace
}  // namespace xb
