// --format prom: the exposition writer (report/prom), doctor's units and
// labels (family/doctor/verdict_prom), fleet's labels, NVML's spellings.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backend/common/nvlink.hpp"
#include "family/doctor/doctor_family.hpp"
#include "family/doctor/verdict_prom.hpp"
#include "family/fleet/fleet_prom.hpp"
#include "report/prom.hpp"

namespace xb {
namespace {

std::string labels_text(const PromLabels& l) {
  std::string out;
  for (const auto& [k, v] : l) out.append(k).append("=").append(v).append(" ");
  return out;
}

Report report_of(const std::string& command, const std::string& backend,
                 const std::vector<Finding>& findings) {
  Report r;
  r.command = command;
  r.env.backend = backend;
  r.env.host = "node1";
  r.env.devices.push_back({0, "GPU0", 0, "00000000:17:00.0", "GPU-0123"});
  for (const Finding& f : findings) r.results.push_back(finding_record(f, 0));
  return r;
}

}  // namespace

TEST(Prom, FamiliesKeepTheirSamplesTogetherAndEscape) {
  PromText t;
  t.add("a_seconds", "first \\ help\nline", {{"x", "1"}}, 1.5);
  t.add("b_ratio", "second", {{"x", "q\"\\\n"}}, 0.25);
  t.add("a_seconds", "ignored", {{"x", "2"}, {"empty", ""}}, 2);
  t.add("a_seconds", "ignored", {{"x", "2"}}, 3);  // the same series: dropped
  EXPECT_EQ(t.duplicates(), 1u);
  EXPECT_EQ(t.text(),
            "# HELP a_seconds first \\\\ help\\nline\n# TYPE a_seconds gauge\n"
            "a_seconds{x=\"1\"} 1.5\na_seconds{x=\"2\"} 2\n"
            "# HELP b_ratio second\n# TYPE b_ratio gauge\nb_ratio{x=\"q\\\"\\\\\\n\"} 0.25\n");
  EXPECT_EQ(prom_value(1e9), "1000000000");
  EXPECT_EQ(prom_value(std::nan("")), "NaN");
}

TEST(Prom, EveryUnitOfAVerdictHasABaseUnitMetric) {
  // The units the checks write (Finding::unit); a new one needs its row.
  for (const char* u : {"GB/s", "GB/s raw", "us", "% CV", "s held", "hosts", "pairs", "checks"}) {
    const PromQuantity* q = prom_quantity(u);
    ASSERT_NE(q, nullptr) << u;
    EXPECT_GT(in_base_unit(*q, 1), 0) << u;
  }
  EXPECT_EQ(in_base_unit(*prom_quantity("GB/s"), 2.5), 2.5e9);
  EXPECT_EQ(in_base_unit(*prom_quantity("us"), 7.5), 7.5e-6);
  EXPECT_EQ(in_base_unit(*prom_quantity("% CV"), 12), 0.12);
  EXPECT_EQ(std::string(prom_quantity("us")->metric), "latency_seconds");
  EXPECT_EQ(prom_quantity("furlongs"), nullptr);
}

TEST(Prom, WhereTextsBecomeLabels) {
  const auto L = [](const std::string& w, bool accel = true) {
    return labels_text(where_labels(w, accel));
  };
  EXPECT_EQ(L("h2d device 0 dma"), "direction=h2d gpu=0 method=dma ");
  EXPECT_EQ(L("h2d device 0 dma", false), "direction=h2d device=0 method=dma ");
  EXPECT_EQ(L("p2p 0->1 core"), "direction=p2p gpu=0 peer_gpu=1 method=core ");
  EXPECT_EQ(L("duplex device 2 dma h2d"), "variant=duplex gpu=2 method=dma direction=h2d ");
  EXPECT_EQ(L("near h2d device 1 dma"), "variant=near direction=h2d gpu=1 method=dma ");
  EXPECT_EQ(L("device 0 h2d+d2h dma"), "gpu=0 direction=h2d+d2h method=dma ");
  EXPECT_EQ(L("h2d 4 KiB device 3 dma"), "direction=h2d bytes=4096 gpu=3 method=dma ");
  EXPECT_EQ(L("device 1 PCIe"), "gpu=1 ");
  EXPECT_EQ(L("lane 1 to 10.0.0.2:20000 (nic eth1)"), "lane=1 server=10.0.0.2:20000 nic=eth1 ");
  EXPECT_EQ(L("lane to 10.0.0.2:20000"), "server=10.0.0.2:20000 ");
  EXPECT_EQ(L("get 1 MiB rma 0->1"), "op=get bytes=1048576 method=rma src_rank=0 dst_rank=1 ");
  EXPECT_EQ(L("allreduce 64 MiB float"), "op=allreduce bytes=67108864 dtype=float ");
  EXPECT_EQ(L("2 ranks"), "ranks=2 ");
  EXPECT_EQ(L("all"), "");
  EXPECT_EQ(L("-"), "");
}

TEST(Prom, DoctorWritesBaseUnitsAndVerdictValues) {
  const Report r = report_of(
      "doctor", "cuda",
      {{"bandwidth", "h2d device 0 dma", Verdict::warn, 20, 50, "GB/s", "slow"},
       {"latency", "h2d 4 KiB device 0 dma", Verdict::none, 7.5, 0, "us", "for reference"},
       {"devices", "device 0", Verdict::warn, 0, 0, "GB/s", "did not run: x"}});
  const std::string t = doctor_prometheus(r);
  EXPECT_NE(t.find("xferbench_doctor_bandwidth_bytes_per_second{check=\"bandwidth\","
                   "direction=\"h2d\",gpu=\"0\",UUID=\"GPU-0123\",pci_bus_id=\"00000000:17:00.0\","
                   "method=\"dma\"} 20000000000\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("xferbench_doctor_bandwidth_expected_bytes_per_second{check=\"bandwidth\""),
            std::string::npos);
  EXPECT_NE(t.find("xferbench_doctor_latency_seconds{"), std::string::npos);
  EXPECT_NE(t.find("} 7.5e-06\n"), std::string::npos) << t;
  EXPECT_NE(t.find("xferbench_doctor_check_verdict{check=\"devices\",gpu=\"0\",UUID=\"GPU-0123\","
                   "pci_bus_id=\"00000000:17:00.0\"} 1\n"),
            std::string::npos)
      << t;
  // A row that measured nothing has no figure; a row without a verdict no verdict.
  EXPECT_EQ(t.find("bytes_per_second{check=\"devices\""), std::string::npos);
  EXPECT_EQ(t.find("check_verdict{check=\"latency\""), std::string::npos);
  for (const char* banned : {"where=", "unit=", "host=", "verdict=\""})
    EXPECT_EQ(t.find(banned), std::string::npos) << banned;
  EXPECT_NE(t.find("xferbench_build_info{command=\"doctor\",version=\""), std::string::npos);
  EXPECT_NE(t.find("xferbench_doctor_warned_checks 2\n"), std::string::npos);
  EXPECT_NE(t.find("xferbench_doctor_run_timestamp_seconds "), std::string::npos);
}

TEST(Prom, FleetNamesHostsAndLinks) {
  Report r = report_of("fleet", "host",
                       {{"host", "node3", Verdict::fail, 1.5, 10, "GB/s", "slow host"},
                        {"link", "node1<->node2", Verdict::warn, 6, 10, "GB/s", "slow link"},
                        {"fleet", "all", Verdict::pass, 10, 12, "GB/s", "ok"},
                        {"latency", "node4", Verdict::warn, 30, 10, "us", "slow"}});
  r.results[1].extra.emplace_back("rail", std::int64_t{3});
  r.summary.emplace_back("failed_pairs", std::int64_t{2});
  const std::string t = fleet_prometheus(r);
  EXPECT_NE(t.find("xferbench_fleet_bandwidth_bytes_per_second{check=\"host\",nodename=\"node3\"} "
                   "1500000000\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("xferbench_fleet_check_verdict{check=\"link\",src_host=\"node1\",dst_host="
                   "\"node2\",rail=\"3\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("xferbench_fleet_bandwidth_expected_bytes_per_second{check=\"fleet\"} "
                   "12000000000\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("xferbench_fleet_latency_seconds{check=\"latency\",nodename=\"node4\"} 3e-05\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("xferbench_fleet_failed_pairs 2\n"), std::string::npos);
  EXPECT_NE(t.find("xferbench_fleet_failed_checks 1\n"), std::string::npos);
  EXPECT_EQ(t.find(",host=\""), std::string::npos);
  EXPECT_EQ(t.find("{host=\""), std::string::npos);
}

TEST(Prom, NvmlSpellingsForDcgmLabels) {
  EXPECT_EQ(nvml_bus_id("0000:3b:00.0"), "00000000:3B:00.0");
  EXPECT_EQ(nvml_bus_id("00000001:17:00.1"), "00000001:17:00.1");
  EXPECT_EQ(nvml_bus_id("garbage"), "");
  const unsigned char b[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                               0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};
  EXPECT_EQ(nvml_uuid(b), "GPU-01234567-89ab-cdef-0011-223344556677");
}

}  // namespace xb
