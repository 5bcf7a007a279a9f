// The fake CANN runtime's own rules and knobs (tests/fake_cann), straight
// through the C API as the backend loads it (ascend::api(), ascend::hccl())
// or, for what the backend does not bind, through dlsym: reference-counted
// NPUs, a current NPU for synchronous work and for HCCL, copy durations and
// the host's submit cost, the topology, the timeouts, an older CANN without
// them, stalls and late failures, the _P2P advice, collectives larger than
// 64 MiB, a mismatched batch send/recv on two ranks, HCCL's alignment. Each
// test fails without its rule. (Each test runs in a process of its own under
// ctest.)
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/ascend/ascend_internal.hpp"
#include "fake_runtime.hpp"
#include "fake_test.hpp"

namespace xb {
namespace {

using Clock = std::chrono::steady_clock;
using TopoFn = int (*)(std::uint32_t, std::uint32_t, std::uint64_t*);
using ForceFn = int (*)(std::int32_t);
using SyncWithTimeoutFn = int (*)(void*, std::int32_t);

// One logged copy: microseconds on steady_clock, and its bytes.
struct Copy {
  double start, end, bytes;
};
std::vector<Copy> copy_log(int* total = nullptr) {
  auto fn = sym<decltype(&fake_acl_copy_log)>("fake_acl_copy_log");
  if (!fn) return {};
  std::vector<double> raw(3 * 64);
  const int n = fn(raw.data(), 64);
  if (total) *total = n;
  std::vector<Copy> out;
  for (int i = 0; i < std::min(n, 64); ++i)
    out.push_back({raw[3 * i], raw[3 * i + 1], raw[3 * i + 2]});
  return out;
}
double now_us() {
  return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// ---- G1: reference-counted NPUs --------------------------------------------

TEST(FakeRules, EachSetDeviceIsAReferenceAndTheLastResetReleasesTheNpu) {
  const auto& a = acl_up();
  void* stream = nullptr;
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  ASSERT_EQ(a.aclrtResetDevice(1), 0);  // one reference of two
  EXPECT_EQ(current_device(), 1);
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);  // NPU1 is still current
  ASSERT_EQ(a.aclrtDestroyStream(stream), 0);
  ASSERT_EQ(a.aclrtResetDevice(1), 0);  // the last: released
  EXPECT_EQ(current_device(), -1);
  EXPECT_EQ(a.aclrtCreateStream(&stream), kNoContext);
  EXPECT_EQ(rules_broken(), 0);
}

TEST(FakeRules, ForceResetDropsEveryReferenceForEveryThread) {
  const auto& a = acl_up();
  const auto force = sym<ForceFn>("aclrtResetDeviceForce");
  ASSERT_NE(force, nullptr);
  std::atomic<int> phase{0};
  int before = -2, after = -2, malloc_after = -2;
  std::thread other([&] {
    (void)a.aclrtSetDevice(0);
    (void)a.aclrtSetDevice(0);
    before = current_device();
    phase = 1;
    while (phase != 2) std::this_thread::yield();
    after = current_device();
    void* p = nullptr;
    malloc_after = a.aclrtMalloc(&p, 64, 0);
  });
  while (phase != 1) std::this_thread::yield();
  ASSERT_EQ(a.aclrtSetDevice(0), 0);  // three references in all
  EXPECT_EQ(force(0), 0);
  phase = 2;
  other.join();
  EXPECT_EQ(before, 0);
  EXPECT_EQ(after, -1) << "the other thread's NPU was released";
  EXPECT_EQ(malloc_after, kNoContext);
  EXPECT_EQ(current_device(), -1);
  EXPECT_EQ(rules_broken(), 0);
  // Like aclrtResetDevice, with a stream of the NPU alive: a broken rule.
  void* stream = nullptr;
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  EXPECT_EQ(force(1), 0);
  std::string first;
  EXPECT_EQ(rules_broken(&first), 1);
  EXPECT_NE(first.find("aclrtResetDeviceForce(1) with 1 streams"), std::string::npos) << first;
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
  clear_rules();
}

TEST(FakeRules, FinalizeWithAnNpuStillReferencedIsABrokenRule) {
  const auto& a = acl_up();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(a.aclrtSetDevice(0), 0);
  ASSERT_EQ(a.aclrtResetDevice(0), 0);  // once, as the backend's finish_process does
  ASSERT_EQ(a.aclFinalize(), 0);
  std::string first;
  EXPECT_EQ(rules_broken(&first), 1);
  EXPECT_NE(first.find("NPU0 still referenced (2 aclrtSetDevice calls not reset)"),
            std::string::npos)
      << first;
  clear_rules();
}

// ---- G2: synchronous work needs a current NPU --------------------------------

TEST(FakeRules, SynchronousCopiesAndStreamSynchronizeNeedACurrentNpu) {
  const auto& a = acl_up();
  void* stream = nullptr;
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  std::vector<char> x(64, 1), y(64, 0);
  int copy = -1, sync = -1;
  std::thread([&] {  // a thread that never set an NPU
    copy = a.aclrtMemcpy(y.data(), 64, x.data(), 64, ascend::kHostToHost);
    sync = a.aclrtSynchronizeStream(stream);
  })
      .join();
  EXPECT_EQ(copy, kNoContext);
  EXPECT_EQ(sync, kNoContext);
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(a.aclrtMemcpy(y.data(), 64, x.data(), 64, ascend::kHostToHost), 0);
  EXPECT_EQ(y[0], 1);
  EXPECT_EQ(a.aclrtSynchronizeStream(stream), 0);
  EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
}

// ---- G3: time ----------------------------------------------------------------

TEST(FakeRules, ACopyLastsItsBytesOverTheRateOnItsStreamOrItsCaller) {
  setenv("FAKE_ASCEND_GBPS", "0.05", 1);  // 50 MB/s: 4 MiB take 84 ms
  const auto& a = acl_up();
  constexpr std::size_t n = 4 << 20;
  const double want_us = n / 0.05 / 1e3;
  auto clear = sym<decltype(&fake_acl_copy_log_clear)>("fake_acl_copy_log_clear");
  ASSERT_NE(clear, nullptr);
  clear();
  DeviceMemory x(0, n), y(0, n), u(1, n / 2), v(1, n / 2);
  void *s0 = nullptr, *s1 = nullptr, *start = nullptr, *end = nullptr;
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  ASSERT_EQ(a.aclrtCreateStream(&s1), 0);
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  ASSERT_EQ(a.aclrtCreateStream(&s0), 0);
  ASSERT_EQ(a.aclrtCreateEvent(&start), 0);
  ASSERT_EQ(a.aclrtCreateEvent(&end), 0);
  // Two copies one after the other on NPU0's stream, one of half the size
  // alongside on NPU1's.
  ASSERT_EQ(a.aclrtRecordEvent(start, s0), 0);
  ASSERT_EQ(a.aclrtMemcpyAsync(y.p, n, x.p, n, ascend::kDeviceToDevice, s0), 0);
  ASSERT_EQ(a.aclrtMemcpyAsync(x.p, n, y.p, n, ascend::kDeviceToDevice, s0), 0);
  ASSERT_EQ(a.aclrtRecordEvent(end, s0), 0);
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  ASSERT_EQ(a.aclrtMemcpyAsync(v.p, n / 2, u.p, n / 2, ascend::kDeviceToDevice, s1), 0);
  ASSERT_EQ(a.aclrtSynchronizeStream(s1), 0);
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  ASSERT_EQ(a.aclrtSynchronizeStream(s0), 0);
  float ms = 0;
  ASSERT_EQ(a.aclrtEventElapsedTime(&ms, start, end), 0);
  EXPECT_GE(ms * 1e3, 2 * want_us * 0.999) << "the events span both copies";

  int total = 0;
  auto log = copy_log(&total);
  ASSERT_EQ(total, 3);
  std::sort(log.begin(), log.end(), [](const Copy& p, const Copy& q) { return p.start < q.start; });
  std::vector<Copy> big, half;
  for (const Copy& c : log) (c.bytes == n ? big : half).push_back(c);
  ASSERT_EQ(big.size(), 2u);
  ASSERT_EQ(half.size(), 1u);
  for (const Copy& c : big) EXPECT_GE(c.end - c.start, want_us * 0.999);
  EXPECT_GE(half[0].end - half[0].start, want_us / 2 * 0.999);
  EXPECT_GE(big[1].start, big[0].end) << "one stream runs one copy at a time";
  EXPECT_LT(half[0].start, big[0].end) << "another NPU's stream runs alongside";

  // The synchronous copy blocks its caller as long, timed on the caller.
  const double before = now_us();
  const auto t0 = Clock::now();
  ASSERT_EQ(a.aclrtMemcpy(y.p, n, x.p, n, ascend::kDeviceToDevice), 0);
  EXPECT_GE(ms_since(t0) * 1e3, want_us * 0.999);
  log = copy_log(&total);
  ASSERT_EQ(total, 4);
  EXPECT_GE(log[3].start, before);
  EXPECT_LE(log[3].end, now_us());
  EXPECT_GE(log[3].end - log[3].start, want_us * 0.999);
  clear();
  EXPECT_EQ(copy_log(&total).size(), 0u);
  EXPECT_EQ(total, 0);
  EXPECT_EQ(a.aclrtDestroyEvent(start), 0);
  EXPECT_EQ(a.aclrtDestroyEvent(end), 0);
  EXPECT_EQ(a.aclrtDestroyStream(s0), 0);
  ASSERT_EQ(a.aclrtSetDevice(1), 0);
  EXPECT_EQ(a.aclrtDestroyStream(s1), 0);
  unsetenv("FAKE_ASCEND_GBPS");
  EXPECT_EQ(rules_broken(), 0);
}

TEST(FakeRules, SubmittingAnAsyncCopyCostsTheCallerTimeWithoutHoldingTheRuntime) {
  const auto& a = acl_up();
  DeviceMemory x(0, 4096), y(0, 4096);
  void* stream = nullptr;
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  setenv("FAKE_ACL_SUBMIT_US", "300000", 1);
  std::atomic<bool> submitting{false};
  int rc = -1;
  double took_ms = 0, submitted_us = 0;
  std::thread submitter([&] {
    (void)a.aclrtSetDevice(0);
    const auto t0 = Clock::now();
    submitted_us = now_us();
    submitting = true;
    rc = a.aclrtMemcpyAsync(y.p, 4096, x.p, 4096, ascend::kDeviceToDevice, stream);
    took_ms = ms_since(t0);
  });
  while (!submitting) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  // Meanwhile the runtime answers other calls.
  const auto t1 = Clock::now();
  std::size_t free = 0, total = 0;
  EXPECT_EQ(a.aclrtGetMemInfo(ascend::kAclHbmMem, &free, &total), 0);
  EXPECT_LT(ms_since(t1), 150) << "the submit held the runtime";
  submitter.join();
  unsetenv("FAKE_ACL_SUBMIT_US");
  EXPECT_EQ(rc, 0);
  EXPECT_GE(took_ms, 300 * 0.999);
  EXPECT_EQ(a.aclrtSynchronizeStream(stream), 0);
  const auto log = copy_log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_GE(log[0].start, submitted_us + 300000 * 0.999) << "queued after the submit";
  EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
}

// ---- G10: the topology, timeouts, an older CANN --------------------------------

TEST(FakeRules, DevicesTopoAnswersFromTheKnob) {
  setenv("FAKE_ASCEND_DEVICES", "4", 1);
  acl_up();
  const auto topo = sym<TopoFn>("aclrtGetDevicesTopo");
  ASSERT_NE(topo, nullptr);
  std::uint64_t v = 0;
  ASSERT_EQ(topo(0, 1, &v), 0);
  EXPECT_EQ(v, 0x01u) << "HCCS when the knob is unset";
  setenv("FAKE_ASCEND_TOPO", "0-1:SIO,2-3:SIO,1-2:PIX,3-0:PHB,0-2:SYS,*:HCCS_SW", 1);
  auto pair = [&](std::uint32_t x, std::uint32_t y) {
    std::uint64_t out = 0;
    EXPECT_EQ(topo(x, y, &out), 0) << x << "-" << y;
    return out;
  };
  EXPECT_EQ(pair(1, 0), 0x20u);  // SIO, either order
  EXPECT_EQ(pair(3, 2), 0x20u);
  EXPECT_EQ(pair(2, 1), 0x02u);  // PIX
  EXPECT_EQ(pair(0, 3), 0x08u);  // PHB
  EXPECT_EQ(pair(2, 0), 0x10u);  // SYS
  EXPECT_EQ(pair(1, 3), 0x40u);  // HCCS_SW, from *
  setenv("FAKE_ASCEND_TOPO", "*:HCCS,0-1:SIO", 1);
  EXPECT_EQ(pair(0, 1), 0x01u) << "the first entry that matches wins";
  EXPECT_EQ(topo(2, 2, &v), kInvalidParam);
  EXPECT_EQ(topo(0, 4, &v), kInvalidParam);
  EXPECT_EQ(topo(0, 1, nullptr), kInvalidParam);
  int fresh = -1;
  std::thread([&] { fresh = topo(0, 1, &v); }).join();
  EXPECT_EQ(fresh, 0) << "no current NPU needed";
  ASSERT_EQ(ascend::api().aclFinalize(), 0);
  EXPECT_EQ(topo(0, 1, &v), 100001) << "needs aclInit";
  unsetenv("FAKE_ASCEND_TOPO");
  unsetenv("FAKE_ASCEND_DEVICES");
  clear_rules();
}

TEST(FakeRules, SynchronizingWithATimeoutLeavesUnfinishedWorkQueued) {
  const auto& a = acl_up();
  const auto sync_stream = sym<SyncWithTimeoutFn>("aclrtSynchronizeStreamWithTimeout");
  const auto sync_event = sym<SyncWithTimeoutFn>("aclrtSynchronizeEventWithTimeout");
  ASSERT_NE(sync_stream, nullptr);
  ASSERT_NE(sync_event, nullptr);
  setenv("FAKE_ASCEND_LATENCY_US", "400000", 1);
  DeviceMemory x(0, 4096), y(0, 4096);
  void *stream = nullptr, *event = nullptr;
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  ASSERT_EQ(a.aclrtCreateEvent(&event), 0);
  ASSERT_EQ(a.aclrtMemcpyAsync(y.p, 4096, x.p, 4096, ascend::kDeviceToDevice, stream), 0);
  ASSERT_EQ(a.aclrtRecordEvent(event, stream), 0);
  unsetenv("FAKE_ASCEND_LATENCY_US");
  const auto t0 = Clock::now();
  EXPECT_EQ(sync_stream(stream, 20), kStreamSyncTimeout);
  EXPECT_GE(ms_since(t0), 20 * 0.999);
  EXPECT_EQ(sync_event(event, 20), kEventSyncTimeout);
  int status = -1;
  ASSERT_EQ(a.aclrtQueryEventStatus(event, &status), 0);
  EXPECT_EQ(status, 0) << "still queued";
  EXPECT_EQ(sync_stream(stream, -2), kInvalidParam);
  int fresh = -1;
  std::thread([&] { fresh = sync_stream(stream, 10); }).join();
  EXPECT_EQ(fresh, kNoContext);
  EXPECT_EQ(sync_stream(stream, -1), 0);
  EXPECT_EQ(sync_event(event, 1), 0);
  EXPECT_EQ(sync_event(event, -1), 0);
  // The stream's error, as aclrtSynchronizeStream reports it (and clears).
  const auto enqueue = sym<decltype(&fake_acl_enqueue)>("fake_acl_enqueue");
  ASSERT_NE(enqueue, nullptr);
  ASSERT_EQ(enqueue(
                stream, [](void*) { return 7; }, nullptr, nullptr, 0),
            0);
  EXPECT_EQ(sync_stream(stream, 5000), kInjected);
  EXPECT_EQ(sync_stream(stream, 5000), 0);
  EXPECT_EQ(a.aclrtDestroyEvent(event), 0);
  EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
  EXPECT_EQ(rules_broken(), 0);
}

// An older CANN (tests/fake_cann_oldhccl, next to ASCEND_HOME_PATH's
// fake_cann) has none of the four; opened in a child process, so that this
// one loads no second libascendcl.so.
TEST(FakeRules, AnOlderCannHasNoTopologyForceResetOrTimeouts) {
  const char* home = std::getenv("ASCEND_HOME_PATH");
  ASSERT_NE(home, nullptr);
  const char* names[] = {"aclrtGetDevicesTopo", "aclrtResetDeviceForce",
                         "aclrtSynchronizeStreamWithTimeout", "aclrtSynchronizeEventWithTimeout"};
  auto found = [&](const std::string& dir) {  // bit i: names[i] found; 16: no library
    const pid_t pid = fork();
    if (pid == 0) {
      void* l = dlopen((dir + "/lib64/libascendcl.so").c_str(), RTLD_NOW | RTLD_LOCAL);
      int bits = l ? 0 : 16;
      for (int i = 0; l && i < 4; ++i)
        if (dlsym(l, names[i])) bits |= 1 << i;
      if (l && !dlsym(l, "aclrtSynchronizeStream")) bits = 16;
      _exit(bits);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 32;
  };
  EXPECT_EQ(found(home), 0xf);
  EXPECT_EQ(found(std::string(home) + "_oldhccl"), 0);
}

// ---- N11: a failure after the first calls -------------------------------------

TEST(FakeRules, AnInjectedFailureCanComeAfterTheFirstCalls) {
  const auto& a = acl_up();
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  setenv("FAKE_ACL_FAIL", "aclrtMalloc", 1);
  setenv("FAKE_ACL_FAIL_AFTER", "2", 1);
  void* p[4] = {};
  EXPECT_EQ(a.aclrtMalloc(&p[0], 64, 0), 0);
  EXPECT_EQ(a.aclrtMalloc(&p[1], 64, 0), 0);
  EXPECT_EQ(a.aclrtMalloc(&p[2], 64, 0), kInjected);
  EXPECT_EQ(a.aclrtMalloc(&p[3], 64, 0), kInjected);
  unsetenv("FAKE_ACL_FAIL_AFTER");
  EXPECT_EQ(a.aclrtMalloc(&p[3], 64, 0), kInjected) << "without FAIL_AFTER: every call";
  unsetenv("FAKE_ACL_FAIL");
  EXPECT_EQ(a.aclrtFree(p[0]), 0);
  EXPECT_EQ(a.aclrtFree(p[1]), 0);
}

// ---- N6: the _P2P advice -------------------------------------------------------

TEST(FakeRules, AnInterNpuCopyOnMemoryWithoutTheP2pPolicyIsAdvice) {
  const auto& a = acl_up();
  constexpr int kP2p = ascend::kAclMallocHugeFirstP2p, kHighBandWidth = 0x1000;
  DeviceMemory plain0(0, 4096), other0(0, 4096), p2p0(0, 4096, kP2p);
  DeviceMemory plain1(1, 4096), p2p1(1, 4096, kP2p | kHighBandWidth);
  ASSERT_EQ(a.aclrtDeviceEnablePeerAccess(0, 0), 0);  // NPU1 current
  ASSERT_EQ(a.aclrtSetDevice(0), 0);
  ASSERT_EQ(a.aclrtDeviceEnablePeerAccess(1, 0), 0);
  EXPECT_EQ(a.aclrtMemcpy(p2p1.p, 4096, p2p0.p, 4096, ascend::kDeviceToDevice), 0);
  EXPECT_EQ(a.aclrtMemcpy(other0.p, 4096, plain0.p, 4096, ascend::kDeviceToDevice), 0);
  EXPECT_EQ(advice(), 0) << "both _P2P, or on one NPU";
  EXPECT_EQ(a.aclrtMemcpy(p2p1.p, 4096, plain0.p, 4096, ascend::kDeviceToDevice), 0);
  std::string first;
  EXPECT_EQ(advice(&first), 1);
  EXPECT_EQ(first, "inter-NPU copy on memory allocated without ACL_MEM_MALLOC_HUGE_FIRST_P2P");
  void* stream = nullptr;
  ASSERT_EQ(a.aclrtCreateStream(&stream), 0);
  EXPECT_EQ(a.aclrtMemcpyAsync(plain1.p, 4096, p2p0.p, 4096, ascend::kDeviceToDevice, stream), 0);
  EXPECT_EQ(a.aclrtSynchronizeStream(stream), 0);
  EXPECT_EQ(a.aclrtDestroyStream(stream), 0);
  EXPECT_EQ(advice(), 2);
  EXPECT_EQ(rules_broken(), 0) << "advice is kept apart from the rules";
  clear_rules();
  EXPECT_EQ(advice(), 0);
}

// ==== the fake HCCL ===========================================================

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

// ---- G9: two ranks, one process each ---------------------------------------------

// Rank `rank` of 2 on NPU `rank`: a batch send/recv in which rank 1 expects
// one element fewer than rank 0 sends. Rank 1's stream reports it, rank 0's
// does not, and both then destroy the communicator at once. "" or what
// went wrong.
std::string mismatched_batch(int rank, int info_in, int info_out) {
  const BackendStatus status = probe_ascend();
  if (!status.available) return status.reason;
  const auto& a = ascend::api();
  if (!ascend::hccl().api) return ascend::hccl().error;
  const auto& h = *ascend::hccl().api;
  auto check = [](int e, const char* what) {
    return e == 0 ? std::string() : std::string(what) + " = " + std::to_string(e);
  };
  std::string err;
  if (!(err = check(a.aclrtSetDevice(rank), "aclrtSetDevice")).empty()) return err;
  ascend::HcclRootInfo info{};
  if (rank == 0) {
    if (!(err = check(h.HcclGetRootInfo(&info), "HcclGetRootInfo")).empty()) return err;
    if (write(info_out, &info, sizeof info) != static_cast<ssize_t>(sizeof info))
      return "root info not sent";
  } else {
    std::size_t got = 0;
    while (got < sizeof info) {
      const ssize_t r = read(info_in, info.internal + got, sizeof info - got);
      if (r <= 0) return "no root info from rank 0";
      got += static_cast<std::size_t>(r);
    }
  }
  ascend::HcclComm comm = nullptr;
  void *stream = nullptr, *buf = nullptr;
  const auto r = static_cast<std::uint32_t>(rank);
  if (!(err = check(h.HcclCommInitRootInfo(2, &info, r, &comm), "init")).empty()) return err;
  if (!(err = check(a.aclrtCreateStream(&stream), "aclrtCreateStream")).empty()) return err;
  if (!(err = check(a.aclrtMalloc(&buf, 4096, 0), "aclrtMalloc")).empty()) return err;
  char* p = static_cast<char*>(buf);
  ascend::HcclSendRecvItem items[2] = {
      {ascend::kHcclSend, p, 256, ascend::kHcclInt32, 1 - r},
      {ascend::kHcclRecv, p + 1024, rank == 1 ? 255u : 256u, ascend::kHcclInt32, 1 - r},
  };
  if (!(err = check(h.HcclBatchSendRecv(items, 2, comm, stream), "batch")).empty()) return err;
  const int sync = a.aclrtSynchronizeStream(stream);
  if (sync != (rank == 1 ? kInjected : 0))
    return "rank " + std::to_string(rank) + " synchronized with " + std::to_string(sync);
  if (!(err = check(h.HcclCommDestroy(comm), "HcclCommDestroy")).empty()) return err;
  if (!(err = check(a.aclrtDestroyStream(stream), "aclrtDestroyStream")).empty()) return err;
  if (!(err = check(a.aclrtFree(buf), "aclrtFree")).empty()) return err;
  std::string first;
  if (rules_broken(&first) != 0) return "rule broken: " + first;
  return "";
}

TEST(FakeHccl, AMismatchedBatchSendRecvLeavesNoRankWaiting) {
  if (dlopen("libascendcl.so", RTLD_NOW | RTLD_NOLOAD))
    GTEST_SKIP() << "CANN is loaded in this process already: run this test on its own (ctest does)";
  int info[2], report[2][2];
  ASSERT_EQ(pipe(info), 0);
  ASSERT_EQ(pipe(report[0]), 0);
  ASSERT_EQ(pipe(report[1]), 0);
  pid_t pid[2];
  for (int r = 0; r < 2; ++r) {
    pid[r] = fork();
    ASSERT_GE(pid[r], 0);
    if (pid[r] == 0) {
      close(r == 0 ? info[0] : info[1]);
      const std::string err = mismatched_batch(r, info[0], info[1]);
      close(r == 0 ? info[1] : info[0]);
      if (!err.empty()) (void)!write(report[r][1], err.data(), err.size());
      _exit(err.empty() ? 0 : 1);
    }
  }
  close(info[0]);
  close(info[1]);
  close(report[0][1]);
  close(report[1][1]);
  // Both must be done well before the fake's 120 s barrier deadline.
  int status[2] = {0, 0};
  bool done[2] = {false, false}, killed = false;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!done[0] || !done[1]) {
    for (int r = 0; r < 2; ++r)
      if (!done[r] && waitpid(pid[r], &status[r], WNOHANG) == pid[r]) done[r] = true;
    if (Clock::now() > deadline) {
      for (int r = 0; r < 2; ++r)
        if (!done[r]) {
          kill(pid[r], SIGKILL);
          waitpid(pid[r], &status[r], 0);
          done[r] = killed = true;
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  shm_unlink(("/xb_fake_hccl_" + std::to_string(pid[0]) + "_0").c_str());  // left by a failure
  EXPECT_FALSE(killed) << "a rank was still waiting after 30 s";
  for (int r = 0; r < 2; ++r) {
    std::string err;
    char buf[256];
    for (ssize_t n; (n = read(report[r][0], buf, sizeof buf)) > 0;)
      err.append(buf, static_cast<std::size_t>(n));
    close(report[r][0]);
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << "rank " << r << " (status " << status[r] << "): " << err;
  }
}

}  // namespace
}  // namespace xb
