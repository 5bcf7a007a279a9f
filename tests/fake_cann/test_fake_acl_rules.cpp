// The fake AscendCL's calling rules (tests/fake_cann/fake_acl.cpp lists
// them), each shown to catch an order the Ascend backend used to get wrong:
// an event recorded or a stream destroyed with another NPU current, work that
// completes after its call returns, peer access from the NPU that runs a
// copy, page-locked memory and async copies, aclFinalize after every NPU's
// reset. (Each test runs in a process of its own under ctest.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/ascend/ascend_internal.hpp"
#include "fake_test.hpp"

namespace xb {
namespace {

TEST(FakeRules, AnEventRecordedWithAnotherNpuCurrentIs107003) {
  const auto& a = acl_up();
  void *stream = nullptr, *event = nullptr;
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  ASSERT_EQ(a.aclrtCreateEvent(&event), 0);
  // The backend's old order: the copy of NPU1 left NPU1 current, then the
  // start event of NPU0's lane was recorded.
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  EXPECT_EQ(a.aclrtRecordEvent(event, stream), kStreamContext);
  DeviceMemory x(0, 4096), y(0, 4096);
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  EXPECT_EQ(a.aclrtMemcpyAsync(y.p, 4096, x.p, 4096, 3, stream), kStreamContext);
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  EXPECT_EQ(a.aclrtRecordEvent(event, stream), 0);
  EXPECT_EQ(a.aclrtSynchronizeStream(stream), 0);
  EXPECT_EQ(a.aclrtDestroyEvent(event), 0);
  EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
  EXPECT_EQ(rules_broken(), 0);
}

TEST(FakeRules, AStreamDestroyedFromAnotherNpuOrWithWorkQueuedIsABrokenRule) {
  const auto& a = acl_up();
  setenv("FAKE_ASCEND_LATENCY_US", "20000", 1);
  void* stream = nullptr;
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  EXPECT_EQ(a.aclrtDestroyStream(stream), kStreamContext);  // the old ~AscendStream
  std::string first;
  EXPECT_EQ(rules_broken(&first), 1);
  EXPECT_NE(first.find("from another NPU"), std::string::npos) << first;
  clear_rules();
  {
    DeviceMemory x(0, 1 << 20), y(0, 1 << 20);
    ASSERT_EQ(a.aclrtMemcpyAsync(y.p, 1 << 20, x.p, 1 << 20, 3, stream), 0);
    EXPECT_EQ(a.aclrtDestroyStream(stream), 0);  // no synchronize first
  }
  EXPECT_EQ(rules_broken(&first), 1);
  EXPECT_NE(first.find("work still queued"), std::string::npos) << first;
  clear_rules();
  unsetenv("FAKE_ASCEND_LATENCY_US");
}

TEST(FakeRules, WorkCompletesLaterSoAnEarlyReadSeesStaleData) {
  const auto& a = acl_up();
  setenv("FAKE_ASCEND_LATENCY_US", "50000", 1);
  DeviceMemory src(0, 4096), dst(0, 4096);
  std::vector<unsigned char> ones(4096, 1), twos(4096, 2), back(4096, 0);
  ASSERT_EQ(a.aclrtMemcpy(src.p, 4096, ones.data(), 4096, 1), 0);
  ASSERT_EQ(a.aclrtMemcpy(dst.p, 4096, twos.data(), 4096, 1), 0);
  void *stream = nullptr, *done = nullptr;
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  ASSERT_EQ(a.aclrtCreateEvent(&done), 0);
  ASSERT_EQ(a.aclrtMemcpyAsync(dst.p, 4096, src.p, 4096, 3, stream), 0);
  ASSERT_EQ(a.aclrtRecordEvent(done, stream), 0);
  int status = -1;
  ASSERT_EQ(a.aclrtQueryEventStatus(done, &status), 0);
  EXPECT_EQ(status, 0);  // not reached yet
  float ms = 0;
  EXPECT_NE(a.aclrtEventElapsedTime(&ms, done, done), 0);  // not complete
  ASSERT_EQ(a.aclrtMemcpy(back.data(), 4096, dst.p, 4096, 2), 0);
  EXPECT_EQ(back[0], 2) << "read before the stream was synchronized";
  ASSERT_EQ(a.aclrtSynchronizeStream(stream), 0);
  ASSERT_EQ(a.aclrtQueryEventStatus(done, &status), 0);
  EXPECT_EQ(status, 1);
  ASSERT_EQ(a.aclrtMemcpy(back.data(), 4096, dst.p, 4096, 2), 0);
  EXPECT_EQ(back[0], 1);
  EXPECT_EQ(a.aclrtDestroyEvent(done), 0);
  EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
  unsetenv("FAKE_ASCEND_LATENCY_US");
  EXPECT_EQ(rules_broken(), 0);
}

TEST(FakeRules, ACopyBetweenNpusNeedsPeerAccessFromTheNpuThatRunsIt) {
  const auto& a = acl_up();
  DeviceMemory x(0, 4096), y(1, 4096);
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  EXPECT_NE(a.aclrtMemcpy(y.p, 4096, x.p, 4096, 3), 0);
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  ASSERT_EQ(a.aclrtDeviceEnablePeerAccess(0, 0), 0);  // 1 -> 0 only
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  EXPECT_NE(a.aclrtMemcpy(y.p, 4096, x.p, 4096, 3), 0);
  EXPECT_EQ(a.aclrtDeviceEnablePeerAccess(1, 1), 200006);  // flags must be 0
  ASSERT_EQ(a.aclrtDeviceEnablePeerAccess(1, 0), 0);
  EXPECT_EQ(a.aclrtMemcpy(y.p, 4096, x.p, 4096, 3), 0);
}

TEST(FakeRules, PinnedHostMemoryNeedsACurrentNpuAndAsyncCopiesTheirRules) {
  const auto& a = acl_up();
  int fresh_thread = 0;
  std::thread([&] {
    void* p = nullptr;
    fresh_thread = a.aclrtMallocHost(&p, 4096);
  }).join();
  EXPECT_EQ(fresh_thread, kNoContext);
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  void *h1 = nullptr, *h2 = nullptr, *stream = nullptr;
  ASSERT_EQ(a.aclrtMallocHost(&h1, 4096), 0);
  ASSERT_EQ(a.aclrtMallocHost(&h2, 4096), 0);
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  EXPECT_EQ(a.aclrtMemcpyAsync(h2, 4096, h1, 4096, 0, stream), 207000);  // host to host
  DeviceMemory d(0, 4096);
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  EXPECT_EQ(a.aclrtMemcpyAsync(static_cast<char*>(d.p) + 8, 64, h1, 64, 1, stream), 100000);
  EXPECT_EQ(a.aclrtMemcpyAsync(d.p, 64, h1, 64, 1, stream), 0);
  EXPECT_EQ(a.aclrtSynchronizeStream(stream), 0);
  EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
  EXPECT_EQ(a.aclrtFreeHost(h1), 0);
  EXPECT_EQ(a.aclrtFreeHost(h2), 0);
}

TEST(FakeRules, FinalizeComesAfterEveryNpuIsResetAndOnlyOnce) {
  const auto& a = acl_up();
  void* stream = nullptr;
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  ASSERT_EQ(a.aclrtResetDevice(1), 0);  // with a stream of it alive
  std::string first;
  EXPECT_EQ(rules_broken(&first), 1);
  EXPECT_NE(first.find("aclrtResetDevice(1) with 1 streams"), std::string::npos) << first;
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
  clear_rules();
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  ASSERT_EQ(a.aclFinalize(), 0);  // NPU0 and NPU1 never reset: the old atexit order
  EXPECT_EQ(rules_broken(&first), 2);
  EXPECT_NE(first.find("aclFinalize before aclrtResetDevice"), std::string::npos) << first;
  EXPECT_EQ(a.aclFinalize(), 100037);  // ACL_ERROR_REPEAT_FINALIZE
  clear_rules();
}

}  // namespace
}  // namespace xb
