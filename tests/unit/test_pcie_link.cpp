// A PCIe link's capability (doctor's expected figure and `link` row) from a
// fake sysfs tree: the card's own maximum and its slot's (review N4: a Gen5
// GPU in a Gen4 slot is a Gen4 link, not a Gen5 link running at half).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/backend.hpp"
#include "backend/common/pcie_sysfs.hpp"
#include "family/doctor/doctor_checks.hpp"

namespace xb {
namespace {

namespace fs = std::filesystem;

void put(const fs::path& dir, const char* leaf, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / leaf) << text << "\n";
}

// /sys as Linux lays it out: bus/pci/devices/<pci> links to the device's
// folder under devices/, inside its upstream port's folder (or the root
// bus's, which has no link files).
struct FakeSysfs {
  fs::path root;
  explicit FakeSysfs(const std::string& name) : root(fs::path(::testing::TempDir()) / name) {
    fs::remove_all(root);
    fs::create_directories(root / "bus/pci/devices");
  }
  ~FakeSysfs() { fs::remove_all(root); }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  // A device at `rel` under devices/ with its link files.
  fs::path device(const std::string& rel, const std::string& cur, const std::string& max, int width,
                  int max_width) {
    fs::path dir = root / "devices" / rel;
    put(dir, "current_link_speed", cur);
    put(dir, "max_link_speed", max);
    put(dir, "current_link_width", std::to_string(width));
    put(dir, "max_link_width", std::to_string(max_width));
    const std::string pci = fs::path(rel).filename().string();
    fs::create_directory_symlink(fs::path("../../..") / "devices" / rel,
                                 root / "bus/pci/devices" / pci);
    return dir;
  }
};

TEST(PcieLink, TheSlotLimitsAGen5CardInAGen4Slot) {
  FakeSysfs sys("xb_sysfs_slot");
  // The root port 0000:00:01.1 is Gen4 x16; the H100 PCIe below it Gen5 x16, idle at Gen1.
  put(sys.root / "devices/pci0000:00/0000:00:01.1", "max_link_speed", "16.0 GT/s PCIe");
  put(sys.root / "devices/pci0000:00/0000:00:01.1", "max_link_width", "16");
  sys.device("pci0000:00/0000:00:01.1/0000:17:00.0", "2.5 GT/s PCIe", "32.0 GT/s PCIe", 16, 16);
  const LinkFacts f = pcie_link_facts("0000:17:00.0", sys.root.string());
  EXPECT_EQ(f.pcie_max_speed, "32.0 GT/s PCIe");
  EXPECT_EQ(f.pcie_port_max_speed, "16.0 GT/s PCIe");
  EXPECT_EQ(f.pcie_port_max_width, 16);
  EXPECT_EQ(f.source, "sysfs 0000:17:00.0");
  // The expectation is Gen4 x16 (31.5 GB/s raw), not the card's Gen5 (63.0).
  const auto cap = pcie_capability(f);
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->gts, 16.0);
  EXPECT_EQ(cap->lanes, 16);
  EXPECT_TRUE(cap->slot_limited);
  EXPECT_EQ(cap->card_gts, 32.0);
  EXPECT_NEAR(*pcie_expected_raw(f), 31.508, 0.01);
  // Idle at Gen1: below what the link can do, but the advice names the slot's limit.
  const auto idle = judge_pcie_link(f);
  ASSERT_TRUE(idle);
  EXPECT_EQ(idle->verdict, Verdict::warn);
  EXPECT_NE(idle->why.find("below Gen4 x16, the slot's limit"), std::string::npos) << idle->why;
}

TEST(PcieLink, ASlotLimitedLinkAtItsLimitPassesAndNamesTheSlot) {
  LinkFacts f;
  f.pcie_current_speed = "16.0 GT/s PCIe";
  f.pcie_max_speed = "32.0 GT/s PCIe";
  f.pcie_port_max_speed = "16.0 GT/s PCIe";
  f.pcie_width = f.pcie_max_width = f.pcie_port_max_width = 16;
  const auto j = judge_pcie_link(f);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->verdict, Verdict::pass);
  EXPECT_NEAR(j->expected, 31.508, 0.01);
  EXPECT_EQ(j->why.find("reseat"), std::string::npos) << j->why;
  EXPECT_NE(j->why.find("the slot's limit"), std::string::npos) << j->why;
  EXPECT_NE(j->why.find("the card can do Gen5 x16"), std::string::npos) << j->why;
  // The same card in a Gen5 slot, trained at Gen4: the card's fault to look at.
  f.pcie_port_max_speed = "32.0 GT/s PCIe";
  const auto k = judge_pcie_link(f);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->verdict, Verdict::warn);
  EXPECT_NE(k->why.find("below Gen5 x16, its maximum: reseat the card"), std::string::npos)
      << k->why;
  // An x16 card in an x8 slot: x8 is what the link can do.
  f.pcie_port_max_speed = "16.0 GT/s PCIe";
  f.pcie_width = f.pcie_port_max_width = 8;
  const auto w = judge_pcie_link(f);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->verdict, Verdict::pass);
  EXPECT_NE(w->why.find("Gen4 x8 as the slot's limit"), std::string::npos) << w->why;
}

TEST(PcieLink, ADeviceWithoutAReadableParentKeepsItsOwnMaximum) {
  FakeSysfs sys("xb_sysfs_rootbus");
  // A passthrough GPU on a VM's root bus: the folder above it has no link files.
  sys.device("pci0000:00/0000:00:0a.0", "2.5 GT/s PCIe", "32.0 GT/s PCIe", 16, 16);
  const LinkFacts f = pcie_link_facts("0000:00:0a.0", sys.root.string());
  EXPECT_EQ(f.pcie_port_max_speed, "");
  EXPECT_EQ(f.pcie_port_max_width, 0);
  const auto cap = pcie_capability(f);
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->gts, 32.0);
  EXPECT_FALSE(cap->slot_limited);
  EXPECT_NEAR(*pcie_expected_raw(f), 63.015, 0.01);
  // Upper case in, as CUDA writes it; a device that is not there reads as nothing.
  EXPECT_EQ(pcie_link_facts("0000:00:0A.0", sys.root.string()).pcie_width, 16);
  const LinkFacts none = pcie_link_facts("0000:AB:00.0", sys.root.string());
  EXPECT_EQ(none.pcie_max_speed, "");
  EXPECT_FALSE(pcie_capability(none));
}

TEST(PcieLink, APortReportingLessThanTheLinkRunsAtDoesNotLowerIt) {
  // Some virtual root ports report 2.5 GT/s x1 while the link runs at Gen4 x16.
  LinkFacts f;
  f.pcie_current_speed = "16.0 GT/s PCIe";
  f.pcie_max_speed = "16.0 GT/s PCIe";
  f.pcie_port_max_speed = "2.5 GT/s PCIe";
  f.pcie_width = f.pcie_max_width = 16;
  f.pcie_port_max_width = 1;
  const auto cap = pcie_capability(f);
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->gts, 16.0);
  EXPECT_EQ(cap->lanes, 16);
  EXPECT_FALSE(cap->slot_limited);
}

}  // namespace
}  // namespace xb
