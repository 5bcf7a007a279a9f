// Backend selection: every compiled-in backend is listed with a reason when
// it cannot run, `auto` takes the first that can, and asking for one that
// cannot is a usage error that carries the reason.
#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "backend/common/device_common.hpp"
#include "backend/common/last_error.hpp"
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
  EXPECT_EQ(xb::resident_blocks(1, 132, nullptr), 132);   // sm engine: one block per SM
  EXPECT_EQ(xb::resident_blocks(8, 132, nullptr), 1056);  // ce: no shared memory asked
  EXPECT_EQ(xb::resident_blocks(1, 132, "50"), 66);       // MPS client at half the threads
  EXPECT_EQ(xb::resident_blocks(1, 132, "33.3"), 43);     // rounded down
  EXPECT_EQ(xb::resident_blocks(1, 132, "0.1"), 1);       // at least one SM
  EXPECT_EQ(xb::resident_blocks(1, 132, "100"), 132);
  for (const char* bad : {"", "abc", "0", "-5", "150", "50%"})
    EXPECT_EQ(xb::resident_blocks(1, 132, bad), 132) << bad;
  EXPECT_EQ(xb::resident_blocks(0, 132, nullptr), 0);  // the kernel fits nowhere
}

// Concurrent SM-kernel copies on one GPU (CUDA review 2, N3): each leg's
// grid was 2 x SMs, so two legs of a kernel with 2 blocks per SM resident
// could not run at once and the second one's time included the first's.
TEST(CopyBlocks, LegsOnOneDeviceShareItsResidentBlocks) {
  using xb::copy_blocks_per_leg;
  EXPECT_EQ(copy_blocks_per_leg(132, 1, 264, 0), 264);  // one copy: 2 per SM, as before
  EXPECT_EQ(copy_blocks_per_leg(132, 1, 132, 0), 264);  // one kernel may run in waves
  EXPECT_EQ(copy_blocks_per_leg(132, 2, 264, 0), 132);  // staged, 2 per SM: one SM's worth each
  EXPECT_EQ(copy_blocks_per_leg(132, 2, 396, 0), 132);  // direct, 3 per SM: 2 x SMs in all
  EXPECT_EQ(copy_blocks_per_leg(132, 2, 132, 0), 66);   // a 227 KiB tile: one block per SM
  EXPECT_EQ(copy_blocks_per_leg(132, 3, 264, 0), 88);
  EXPECT_EQ(copy_blocks_per_leg(132, 7, 264, 0), 37);       // one_to_all on 8 GPUs
  EXPECT_EQ(copy_blocks_per_leg(132, 2, 0, 0), 132);        // residency unknown: 2 x SMs shared
  EXPECT_EQ(copy_blocks_per_leg(4, 300, 8, 0), 1);          // at least one block
  EXPECT_EQ(copy_blocks_per_leg(132, 2, 264, 1000), 1000);  // --threads: as asked
  for (int legs = 2; legs <= 16; ++legs)
    for (int resident : {132, 264, 396, 1056}) {
      const int b = copy_blocks_per_leg(132, legs, resident, 0);
      EXPECT_TRUE(xb::copy_legs_coresident(legs, b, resident)) << legs << " " << resident;
    }
}

TEST(CopyBlocks, AskedBlocksBeyondResidencyDoNotRunAtOnce) {
  using xb::copy_legs_coresident;
  EXPECT_TRUE(copy_legs_coresident(1, 100000, 264));  // one kernel: waves are fine
  EXPECT_TRUE(copy_legs_coresident(2, 132, 264));
  EXPECT_FALSE(copy_legs_coresident(2, 133, 264));
  EXPECT_FALSE(copy_legs_coresident(2, 264, 264));  // the old default for two legs
  EXPECT_TRUE(copy_legs_coresident(2, 264, 0));     // unknown: not refused
}

// The thread's last-error slot as the CUDA runtime keeps it: a failing call
// writes it, a succeeding one leaves it, get_last_error reads and clears it.
struct LastErrorSlot {
  int slot = 0;
  int get_last_error() {
    const int e = slot;
    slot = 0;
    return e;
  }
  int call(int result) {
    if (result != 0) slot = result;
    return result;
  }
};
constexpr int kOk = 0, kNotReady = 600, kHostRegisterFailed = 712, kLaunchFailed = 719;

TEST(LastErrorSlot, ANotReadyQueryDoesNotFailTheNextLaunch) {
  LastErrorSlot rt;
  const auto get = [&] { return rt.get_last_error(); };
  // gemm-ar's phase wait polls its event before the work is done
  EXPECT_EQ(xb::query_clearing_not_ready([&] { return rt.call(kNotReady); }, get, kNotReady),
            kNotReady);
  EXPECT_EQ(xb::launch_reporting_own_error(get, [&] { rt.call(kOk); }), kOk);
  // What the review found: a raw query leaves NotReady, and a launcher that
  // ends in get_last_error reports it as the launch's failure.
  rt.call(kNotReady);
  rt.call(kOk);
  EXPECT_EQ(rt.get_last_error(), kNotReady);
}

TEST(LastErrorSlot, AStaleErrorIsNotTheLaunchsButItsOwnIs) {
  LastErrorSlot rt;
  const auto get = [&] { return rt.get_last_error(); };
  rt.call(kHostRegisterFailed);  // doctor's numa check caught this one and went on
  EXPECT_EQ(xb::launch_reporting_own_error(get, [&] { rt.call(kOk); }), kOk);
  EXPECT_EQ(xb::launch_reporting_own_error(get, [&] { rt.call(kLaunchFailed); }), kLaunchFailed);
  EXPECT_EQ(rt.slot, 0);  // reported, so cleared
  // a query's real error is an error, and stays for the caller to see
  EXPECT_EQ(xb::query_clearing_not_ready([&] { return rt.call(kLaunchFailed); }, get, kNotReady),
            kLaunchFailed);
}
