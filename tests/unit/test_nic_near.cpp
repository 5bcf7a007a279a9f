// core/nic_near: the NIC nearest a device on PCI, on a fake sysfs tree
// (tests/data/sysfs_pci): GPU 0000:17:00.0 and mlx5_0 (with its ib0) behind
// one switch port of root complex 16, eth0 behind another port of it, GPU
// 0000:81:00.0 and mlx5_1 under root complex 80, and a veth (no PCI device).
#include <gtest/gtest.h>

#include "core/nic_near.hpp"
#include "family/fleet/fleet_rails.hpp"

namespace xb {
namespace {

const std::string kRoot = XFERBENCH_TEST_DATA_DIR "/sysfs_pci";

TEST(NicNear, HopsCountThePathsPastTheirCommonPrefix) {
  EXPECT_EQ(pci_hops("/sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0",
                     "/sys/devices/pci0000:16/0000:16:02.0/0000:18:00.0"),
            2);
  EXPECT_EQ(pci_hops("/sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0",
                     "/sys/devices/pci0000:16/0000:16:03.0/0000:19:00.0"),
            4);
  EXPECT_EQ(pci_hops("/sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0",
                     "/sys/devices/pci0000:80/0000:80:02.0/0000:82:00.0"),
            6);
  EXPECT_EQ(pci_hops("/a/b", "/a/b"), 0);
}

TEST(NicNear, RdmaPortsFirstAnInterfaceOfAnRdmaDeviceAndVirtualOnesLeftOut) {
  const auto nics = pci_nics(kRoot);
  std::vector<std::string> names;
  names.reserve(nics.size());
  for (const auto& n : nics) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"mlx5_0:1", "mlx5_1:1", "eth0"}));
  EXPECT_EQ(nics[0].path, "/sys/devices/pci0000:16/0000:16:02.0/0000:18:00.0");
}

TEST(NicNear, BusIdsInNvmlsAndSysfsSpellings) {
  EXPECT_EQ(pci_path("00000000:17:00.0", kRoot),
            "/sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0");
  EXPECT_EQ(pci_path("0000:81:00.0", kRoot), "/sys/devices/pci0000:80/0000:80:02.0/0000:81:00.0");
  EXPECT_EQ(pci_path("0000:99:00.0", kRoot), "");  // no such device
  EXPECT_EQ(pci_path("", kRoot), "");
}

TEST(NicNear, EachGpuGetsTheNicBehindItsOwnSwitch) {
  const auto nics = pci_nics(kRoot);
  const auto near = nearest_nics(
      {pci_path("00000000:17:00.0", kRoot), pci_path("00000000:81:00.0", kRoot), ""}, nics);
  EXPECT_EQ(near, (std::vector<std::string>{"mlx5_0:1", "mlx5_1:1", ""}));
  // Without the RDMA devices, GPU 0's nearest is eth0 (same root complex), GPU 1's too.
  const std::vector<PciNic> only_eth = {nics.back()};
  EXPECT_EQ(nearest_nics({pci_path("0000:17:00.0", kRoot)}, only_eth),
            (std::vector<std::string>{"eth0"}));
  EXPECT_EQ(nearest_nics({pci_path("0000:17:00.0", kRoot)}, {}), (std::vector<std::string>{""}));
}

// fleet --rails on a GPU backend: GPU g's rail is the NIC nearest it, each NIC once.
TEST(NicNear, RailsOfGpusEachNicOnceWithTheGpusItServes) {
  const auto nics = pci_nics(kRoot);
  const std::string g0 = pci_path("00000000:17:00.0", kRoot),
                    g1 = pci_path("00000000:81:00.0", kRoot);
  std::string how;
  EXPECT_EQ(rails_of_devices({g0, g1}, nics, "GPU", how),
            (std::vector<std::string>{"mlx5_0:1", "mlx5_1:1"}));
  EXPECT_EQ(how, "GPU 0 -> mlx5_0:1; GPU 1 -> mlx5_1:1");
  EXPECT_EQ(rails_of_devices({g0, g0, g1}, nics, "GPU", how),
            (std::vector<std::string>{"mlx5_0:1", "mlx5_1:1"}));
  EXPECT_EQ(how, "GPU 0,1 -> mlx5_0:1; GPU 2 -> mlx5_1:1");
  EXPECT_TRUE(rails_of_devices({"", ""}, nics, "NPU", how).empty());
  EXPECT_NE(how.find("does not say where its devices sit"), std::string::npos) << how;
  EXPECT_TRUE(rails_of_devices({g0}, {}, "GPU", how).empty());
  EXPECT_NE(how.find("no RDMA port or PCI network interface"), std::string::npos) << how;
}

}  // namespace
}  // namespace xb
