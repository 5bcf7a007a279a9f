// The fake AscendCL's own rules and knobs (tests/fake_cann/fake_acl.cpp),
// straight through the C API as the backend loads it (ascend::api()) or,
// for what the backend does not bind, through dlsym: reference-counted NPUs,
// a current NPU for synchronous work, copy durations and the host's submit
// cost, the topology, the timeouts, an older CANN without them, late
// failures, the _P2P advice. The fake HCCL's: test_fake_hccl_rules.cpp (one
// rank) and test_fake_hccl_ranks.cpp (two). Each test fails without its
// rule. (Each test runs in a process of its own under ctest.)
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
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

}  // namespace
}  // namespace xb
