// The fake HCCL's rules on one rank (tests/fake_cann/fake_hccl.cpp lists
// them), straight through the C API as the backend loads it (ascend::hccl()):
// a current NPU on the calling thread, a stalled rank, a failure after the
// first calls, no 64 MiB cap, HCCL's alignment. Each test fails without its
// rule. (Each test runs in a process of its own under ctest.)
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/ascend/ascend_internal.hpp"
#include "fake_test.hpp"

namespace xb {
namespace {

using SyncWithTimeoutFn = int (*)(void*, std::int32_t);

// A 1-rank HCCL communicator of NPU0 with a stream of NPU0.
struct OneRank {
  const ascend::AclApi& a = acl_up();
  const ascend::HcclApi& h = *ascend::hccl().api;
  ascend::HcclRootInfo info{};
  ascend::HcclComm comm = nullptr;
  void* stream = nullptr;
  OneRank() {
    EXPECT_EQ(a.aclrtSetDevice(0), 0);
    EXPECT_EQ(h.HcclGetRootInfo(&info), 0);
    EXPECT_EQ(h.HcclCommInitRootInfo(1, &info, 0, &comm), 0);
    EXPECT_EQ(a.aclrtCreateStream(&stream), 0);
  }
  void finish() {
    EXPECT_EQ(a.aclrtSetDevice(0), 0);
    EXPECT_EQ(a.aclrtSynchronizeStream(stream), 0);
    EXPECT_EQ(h.HcclCommDestroy(comm), 0);
    EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
  }
};

// ---- G6: HCCL needs a current NPU ----------------------------------------------

TEST(FakeRules, CollectivesNeedACurrentNpuOnTheCallingThread) {
  ASSERT_NE(ascend::hccl().api, nullptr) << ascend::hccl().error;
  OneRank c;
  DeviceMemory buf(0, 4096);
  char* p = static_cast<char*>(buf.p);
  int reduce = -1, batch = -1;
  ascend::HcclSendRecvItem items[2] = {
      {ascend::kHcclSend, p, 16, ascend::kHcclFp32, 0},
      {ascend::kHcclRecv, p + 256, 16, ascend::kHcclFp32, 0},
  };
  std::thread([&] {  // a thread that never set an NPU
    reduce = c.h.HcclAllReduce(p, p, 16, ascend::kHcclFp32, ascend::kHcclSum, c.comm, c.stream);
    batch = c.h.HcclBatchSendRecv(items, 2, c.comm, c.stream);
  })
      .join();
  EXPECT_EQ(reduce, kHcclRuntime);
  EXPECT_EQ(batch, kHcclRuntime);
  ASSERT_EQ(c.a.aclrtSetDevice(0), 0);
  EXPECT_EQ(c.h.HcclAllReduce(p, p, 16, ascend::kHcclFp32, ascend::kHcclSum, c.comm, c.stream), 0);
  EXPECT_EQ(c.h.HcclBatchSendRecv(items, 2, c.comm, c.stream), 0);
  c.finish();
  EXPECT_EQ(rules_broken(), 0);
}

// ---- N10, N11: a stalled rank, a failure after the first calls ------------------

TEST(FakeHccl, AStalledRankNeverFinishesItsCollectives) {
  ASSERT_NE(ascend::hccl().api, nullptr) << ascend::hccl().error;
  const auto sync_stream = sym<SyncWithTimeoutFn>("aclrtSynchronizeStreamWithTimeout");
  ASSERT_NE(sync_stream, nullptr);
  OneRank c;
  void* p = nullptr;  // never freed: the stalled work keeps using it
  ASSERT_EQ(c.a.aclrtMalloc(&p, 4096, 0), 0);
  setenv("FAKE_HCCL_STALL", "0", 1);
  EXPECT_EQ(c.h.HcclAllReduce(p, p, 16, ascend::kHcclFp32, ascend::kHcclSum, c.comm, c.stream), 0);
  unsetenv("FAKE_HCCL_STALL");
  EXPECT_EQ(sync_stream(c.stream, 200), kStreamSyncTimeout);
  EXPECT_EQ(sync_stream(c.stream, 200), kStreamSyncTimeout) << "still not finished";
  // The stream, its communicator and their memory are left as they are:
  // none can be synchronized, destroyed or freed (the fake reports the
  // stream at exit); the segment goes now.
  shm_unlink(c.info.internal);
}

TEST(FakeHccl, AnInjectedFailureCanComeAfterTheFirstCalls) {
  ASSERT_NE(ascend::hccl().api, nullptr) << ascend::hccl().error;
  OneRank c;
  DeviceMemory buf(0, 4096);
  setenv("FAKE_HCCL_FAIL", "HcclAllReduce", 1);
  setenv("FAKE_HCCL_FAIL_AFTER", "1", 1);
  EXPECT_EQ(
      c.h.HcclAllReduce(buf.p, buf.p, 16, ascend::kHcclFp32, ascend::kHcclSum, c.comm, c.stream),
      0);
  EXPECT_EQ(
      c.h.HcclAllReduce(buf.p, buf.p, 16, ascend::kHcclFp32, ascend::kHcclSum, c.comm, c.stream),
      kHcclInternal);
  unsetenv("FAKE_HCCL_FAIL_AFTER");
  unsetenv("FAKE_HCCL_FAIL");
  c.finish();
  EXPECT_EQ(rules_broken(), 0);
}

// ---- G8, G11: no 64 MiB cap, HCCL's alignment ------------------------------------

TEST(FakeHccl, ACallLargerThan64MiBRunsAndOnlyTheFakesSlotLimitsOne) {
  ASSERT_NE(ascend::hccl().api, nullptr) << ascend::hccl().error;
  OneRank c;
  constexpr std::size_t n = 80 << 20;
  DeviceMemory send(0, n), recv(0, n);
  std::vector<std::int32_t> host(n / 4);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::int32_t>(i * 7);
  ASSERT_EQ(c.a.aclrtMemcpy(send.p, n, host.data(), n, ascend::kHostToDevice), 0);
  EXPECT_EQ(c.h.HcclAllGather(send.p, recv.p, n / 4, ascend::kHcclInt32, c.comm, c.stream), 0);
  EXPECT_EQ(c.a.aclrtSynchronizeStream(c.stream), 0) << c.a.aclGetRecentErrMsg();
  std::vector<std::int32_t> back(n / 4, -1);
  ASSERT_EQ(c.a.aclrtMemcpy(back.data(), n, recv.p, n, ascend::kDeviceToHost), 0);
  EXPECT_EQ(back, host);
  // More than the fake's 2 GiB slot: refused by the call (nothing is touched).
  const std::uint64_t too_many = (2ULL << 30) / 4 + 1;
  EXPECT_EQ(c.h.HcclAllGather(send.p, recv.p, too_many, ascend::kHcclInt32, c.comm, c.stream),
            kHcclPara);
  EXPECT_EQ(c.h.HcclAllReduce(send.p, recv.p, too_many, ascend::kHcclInt32, ascend::kHcclSum,
                              c.comm, c.stream),
            kHcclPara);
  c.finish();
  EXPECT_EQ(rules_broken(), 0);
}

TEST(FakeRules, HcclBuffersAreAlignedToTheirElementSize) {
  ASSERT_NE(ascend::hccl().api, nullptr) << ascend::hccl().error;
  OneRank c;
  DeviceMemory buf(0, 4096);
  char* p = static_cast<char*>(buf.p);
  using ascend::kHcclFp32, ascend::kHcclSum;
  EXPECT_EQ(c.h.HcclAllReduce(p + 2, p + 64, 4, kHcclFp32, kHcclSum, c.comm, c.stream), kHcclPara);
  EXPECT_EQ(c.h.HcclAllReduce(p, p + 66, 4, kHcclFp32, kHcclSum, c.comm, c.stream), kHcclPara);
  EXPECT_EQ(c.h.HcclAllGather(p + 4, p + 512, 4, ascend::kHcclInt64, c.comm, c.stream), kHcclPara);
  EXPECT_EQ(c.h.HcclBroadcast(p + 2, 4, kHcclFp32, 0, c.comm, c.stream), kHcclPara);
  const std::uint64_t cnt[] = {4}, zero[] = {0};
  EXPECT_EQ(c.h.HcclAlltoAllV(p + 2, cnt, zero, kHcclFp32, p + 256, cnt, zero, kHcclFp32, c.comm,
                              c.stream),
            kHcclPara);
  ascend::HcclSendRecvItem items[2] = {
      {ascend::kHcclSend, p + 2, 4, kHcclFp32, 0},
      {ascend::kHcclRecv, p + 256, 4, kHcclFp32, 0},
  };
  EXPECT_EQ(c.h.HcclBatchSendRecv(items, 2, c.comm, c.stream), kHcclPara);
  // Aligned to the element, not more.
  EXPECT_EQ(c.h.HcclAllReduce(p + 1, p + 65, 4, ascend::kHcclInt8, kHcclSum, c.comm, c.stream), 0);
  EXPECT_EQ(c.h.HcclAllReduce(p + 2, p + 66, 4, ascend::kHcclFp16, kHcclSum, c.comm, c.stream), 0);
  c.finish();
  EXPECT_EQ(rules_broken(), 0);
}

}  // namespace
}  // namespace xb
