// The fake HCCL's rules on one rank (tests/fake_cann/fake_hccl.cpp lists
// them), straight through the C API as the backend loads it (ascend::hccl()):
// a current NPU on the calling thread, a stalled rank, a failure after the
// first calls, no 64 MiB cap, HCCL's alignment, the root info and the
// communicator on the NPU current at their making (an order the backend used
// to get wrong), scatter's and alltoallv's overlaps, nulls and roots. Each
// test fails without its rule. (Each test runs in a process of its own under
// ctest.)
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <string>
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
  // stream at exit). Its segment's name went at the init.
  EXPECT_NE(shm_unlink(c.info.internal), 0);
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

// ---- the root info and its NPU, scatter and alltoallv ---------------------

TEST(FakeRules, TheRootInfoTakesTheCurrentNpuAndItsInitMustMatch) {
  acl_up();
  const auto* h = ascend::hccl().api;
  ASSERT_NE(h, nullptr) << ascend::hccl().error;
  const auto& a = ascend::api();
  // The old order: root info made with NPU1 current (the backend
  // constructor's last), the communicator then made on NPU0.
  ascend::HcclRootInfo info{};
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  ASSERT_EQ(h->HcclGetRootInfo(&info), 0);
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  ascend::HcclComm comm = nullptr;
  EXPECT_EQ(h->HcclCommInitRootInfo(1, &info, 0, &comm), 1);  // HCCL_E_PARA
  ASSERT_EQ(h->HcclGetRootInfo(&info), 0);
  ASSERT_EQ(h->HcclCommInitRootInfo(1, &info, 0, &comm), 0);
  // Its collectives take a stream of its NPU; prod takes no bf16.
  DeviceMemory buf(0, 4096);
  void *own = nullptr, *other = nullptr;
  ASSERT_EQ(a.aclrtCreateStream(&own), 0);
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  ASSERT_EQ(a.aclrtCreateStream(&other), 0);
  EXPECT_EQ(h->HcclAllReduce(buf.p, buf.p, 16, ascend::kHcclFp32, ascend::kHcclSum, comm, other),
            15);  // HCCL_E_RUNTIME
  EXPECT_EQ(a.aclrtDestroyStream(other), 0);
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  EXPECT_EQ(h->HcclAllReduce(buf.p, buf.p, 16, ascend::kHcclBf16, ascend::kHcclProd, comm, own),
            5);  // HCCL_E_NOT_SUPPORT
  EXPECT_EQ(h->HcclAllReduce(buf.p, buf.p, 16, ascend::kHcclFp32, ascend::kHcclSum, comm, own), 0);
  EXPECT_EQ(a.aclrtSynchronizeStream(own), 0);
  EXPECT_EQ(h->HcclCommDestroy(comm), 0);
  EXPECT_EQ(a.aclrtDestroyStream(own), 0);
  EXPECT_EQ(rules_broken(), 0);
}

// A 1-rank HCCL communicator of NPU0 made straight through the API, with a
// stream of its NPU.
struct ApiComm {
  const ascend::AclApi& a = acl_up();
  const ascend::HcclApi& h = *ascend::hccl().api;
  ascend::HcclComm comm = nullptr;
  void* stream = nullptr;
  ApiComm() {
    ascend::HcclRootInfo info{};
    EXPECT_EQ(a.aclrtSetDevice(0), 0);
    EXPECT_EQ(h.HcclGetRootInfo(&info), 0);
    EXPECT_EQ(h.HcclCommInitRootInfo(1, &info, 0, &comm), 0);
    EXPECT_EQ(a.aclrtCreateStream(&stream), 0);
  }
  ~ApiComm() {
    EXPECT_EQ(a.aclrtSetDevice(0), 0);
    EXPECT_EQ(a.aclrtSynchronizeStream(stream), 0);
    EXPECT_EQ(h.HcclCommDestroy(comm), 0);
    EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
  }
};

// The fake's rules for scatter and alltoallv, straight through the API.
TEST(FakeRules, ScatterAndAlltoallvRefuseOverlapsNullsAndABadRoot) {
  const auto& a = acl_up();
  ASSERT_NE(ascend::hccl().api, nullptr) << ascend::hccl().error;
  DeviceMemory buf(0, 4096);
  ApiComm c;
  char* p = static_cast<char*>(buf.p);
  constexpr int kPara = 1, kQueuedWorkFailed = 507000;
  using ascend::kHcclFp32;
  EXPECT_EQ(c.h.HcclScatter(p, p, 16, kHcclFp32, 0, c.comm, c.stream), kPara);  // in place
  EXPECT_EQ(c.h.HcclScatter(p, p + 32, 16, kHcclFp32, 0, c.comm, c.stream), kPara);
  EXPECT_EQ(c.h.HcclScatter(p, p + 64, 16, kHcclFp32, 1, c.comm, c.stream), kPara);   // root 1 of 1
  EXPECT_EQ(c.h.HcclScatter(nullptr, p, 16, kHcclFp32, 0, c.comm, c.stream), kPara);  // the root's
  EXPECT_EQ(
      c.h.HcclScatter(p, p + 64, 16, static_cast<ascend::HcclDataType>(12), 0, c.comm, c.stream),
      kPara);  // no such type
  EXPECT_EQ(c.h.HcclScatter(nullptr, nullptr, 0, kHcclFp32, 0, c.comm, c.stream), 0);  // count 0
  EXPECT_EQ(c.h.HcclScatter(p, p + 64, 16, kHcclFp32, 0, c.comm, c.stream), 0);
  const std::uint64_t cnt[] = {16}, zero[] = {0}, at64[] = {64};
  EXPECT_EQ(
      c.h.HcclAlltoAllV(p, cnt, zero, kHcclFp32, p + 32, cnt, zero, kHcclFp32, c.comm, c.stream),
      kPara);  // [0, 64) and [32, 96)
  // One buffer: the blocks apart (the receive from element 64) do not make two.
  EXPECT_EQ(c.h.HcclAlltoAllV(p, cnt, zero, kHcclFp32, p, cnt, at64, kHcclFp32, c.comm, c.stream),
            kPara);
  EXPECT_EQ(c.h.HcclAlltoAllV(p, nullptr, zero, kHcclFp32, p + 256, cnt, zero, kHcclFp32, c.comm,
                              c.stream),
            kPara);
  EXPECT_EQ(c.h.HcclAlltoAllV(p, cnt, zero, kHcclFp32, p + 256, cnt, nullptr, kHcclFp32, c.comm,
                              c.stream),
            kPara);
  EXPECT_EQ(c.h.HcclAlltoAllV(p, cnt, zero, kHcclFp32, p + 256, cnt, zero, ascend::kHcclInt32,
                              c.comm, c.stream),
            kPara);  // two types
  EXPECT_EQ(
      c.h.HcclAlltoAllV(p, cnt, zero, kHcclFp32, p + 256, cnt, zero, kHcclFp32, c.comm, c.stream),
      0);
  EXPECT_EQ(a.aclrtSynchronizeStream(c.stream), 0);
  // What a rank receives must be what its sender sends: found when it runs.
  const std::uint64_t fewer[] = {15};
  EXPECT_EQ(
      c.h.HcclAlltoAllV(p, cnt, zero, kHcclFp32, p + 256, fewer, zero, kHcclFp32, c.comm, c.stream),
      0);
  EXPECT_EQ(a.aclrtSynchronizeStream(c.stream), kQueuedWorkFailed);
  EXPECT_NE(std::string(a.aclGetRecentErrMsg()).find("its error 1"), std::string::npos)
      << a.aclGetRecentErrMsg();
  setenv("FAKE_HCCL_FAIL", "HcclAlltoAllV", 1);
  EXPECT_EQ(
      c.h.HcclAlltoAllV(p, cnt, zero, kHcclFp32, p + 256, cnt, zero, kHcclFp32, c.comm, c.stream),
      4);  // HCCL_E_INTERNAL
  setenv("FAKE_HCCL_FAIL", "HcclScatter", 1);
  EXPECT_EQ(c.h.HcclScatter(p, p + 64, 16, kHcclFp32, 0, c.comm, c.stream), 4);
  unsetenv("FAKE_HCCL_FAIL");
}

}  // namespace
}  // namespace xb
