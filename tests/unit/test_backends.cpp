// Backend selection: every compiled-in backend is listed with a reason when
// it cannot run, `auto` takes the first that can, and asking for one that
// cannot is a usage error that carries the reason.
#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "backend/common/device_common.hpp"
#include "backend/select/select.hpp"
#include "core/error.hpp"

namespace xb {
namespace {

TEST(Backends, EveryBackendIsListedAndUnavailableOnesSayWhy) {
  const auto all = probe_backends();
  std::vector<std::string> names;
  for (const auto& b : all) {
    names.push_back(b.name);
    if (!b.available) {
      EXPECT_FALSE(b.reason.empty()) << b.name;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cuda", "ascend", "host"}));
  EXPECT_TRUE(all.back().available);  // the host always runs
}

TEST(Backends, AutoTakesTheFirstAvailable) {
  std::string first;
  for (const auto& b : probe_backends())
    if (b.available && first.empty()) first = b.name;
  EXPECT_EQ(make_backend("auto")->name(), first);
}

TEST(Backends, AnUnavailableBackendIsAUsageErrorWithItsReason) {
  for (const auto& b : probe_backends()) {
    if (b.available) continue;
    try {
      make_backend(b.name);
      ADD_FAILURE() << b.name << " was made although unavailable";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(b.reason), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace xb

// gemm-ar on cuda refuses --comm-blocks beyond what can be resident (review
// finding 12): the bound from the occupancy answer, the SMs and MPS's share.
TEST(ResidentBlocks, OccupancyTimesTheSmsThisContextMayUse) {
  EXPECT_EQ(xb::resident_blocks(1, 132, nullptr), 132);  // sm engine: one block per SM
  EXPECT_EQ(xb::resident_blocks(8, 132, nullptr), 1056);  // ce: no shared memory asked
  EXPECT_EQ(xb::resident_blocks(1, 132, "50"), 66);       // MPS client at half the threads
  EXPECT_EQ(xb::resident_blocks(1, 132, "33.3"), 43);     // rounded down
  EXPECT_EQ(xb::resident_blocks(1, 132, "0.1"), 1);       // at least one SM
  EXPECT_EQ(xb::resident_blocks(1, 132, "100"), 132);
  for (const char* bad : {"", "abc", "0", "-5", "150", "50%"})
    EXPECT_EQ(xb::resident_blocks(1, 132, bad), 132) << bad;
  EXPECT_EQ(xb::resident_blocks(0, 132, nullptr), 0);  // the kernel fits nowhere
}
