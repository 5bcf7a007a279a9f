// The Ascend backend against the fake CANN runtime (tests/fake_cann), loaded
// through ASCEND_HOME_PATH as on a real machine: copy flows, waivers and a
// call failing in the middle of a run; and the fake's calling rules, each
// shown to catch the order the backend used to get wrong. (Each test runs
// in a process of its own under ctest.)
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/ascend/ascend_internal.hpp"
#include "core/error.hpp"
#include "family/copy/copy_bench.hpp"

namespace xb {
namespace {

CopyConfig config(std::vector<std::string> cases) {
  CopyConfig cfg;
  cfg.cases = std::move(cases);
  cfg.sizes = {2, 4096, (1 << 20) + 5};
  cfg.p2p_sizes = {1 << 20};
  cfg.iters = cfg.p2p_iters = 2;
  cfg.warmup = 1;
  return cfg;
}

std::vector<Record> copy(const CopyConfig& cfg) {
  auto b = make_ascend_backend();
  Registry reg;
  register_copy(reg);
  validate_copy(*b, cfg);
  return run_copy(*b, reg, cfg);
}

TEST(Ascend, LoadsTheFakeRuntimeAndSeesItsNpus) {
  const BackendStatus s = probe_ascend();
  ASSERT_TRUE(s.available) << s.reason;
  auto b = make_ascend_backend();
  ASSERT_EQ(b->devices().size(), 2u);
  EXPECT_EQ(b->devices()[1].name, "NPU1 Ascend910B3");
  EXPECT_EQ(b->free_memory(MemKind::device, 0), 4ULL << 30);
  EXPECT_TRUE(b->peer_access(0, 1).ok);
  EXPECT_FALSE(b->method_support(Method::core).ok);
}

TEST(Ascend, DmaCopiesVerifyCoreIsWaived) {
  for (const auto& r : copy(config({copy_case::h2d, copy_case::d2h, copy_case::d2d}))) {
    if (r.method == "core") {
      EXPECT_EQ(r.status, Status::waived);
      EXPECT_NE(r.reason.find("device kernels"), std::string::npos) << r.reason;
    } else {
      EXPECT_EQ(r.status, Status::ok) << r.kase << " " << r.bytes << ": " << r.reason;
      EXPECT_TRUE(r.verified);
    }
  }
}

TEST(Ascend, PageableHostMemoryAndP2pMatricesVerify) {
  CopyConfig cfg = config({copy_case::h2d, copy_case::p2p});
  cfg.methods = {Method::dma};
  cfg.host_mem = MemKind::pageable;
  cfg.bidir = true;
  const auto rs = copy(cfg);
  ASSERT_FALSE(rs.empty());
  for (const auto& r : rs) {
    EXPECT_EQ(r.status, Status::ok) << r.kase << ": " << r.reason;
    EXPECT_TRUE(r.verified);
  }
}

TEST(Ascend, AFailingRuntimeCallFailsTheRecordsWithItsError) {
  CopyConfig cfg = config({copy_case::h2d});
  cfg.methods = {Method::dma};
  setenv("FAKE_ACL_FAIL", "aclrtMemcpyAsync", 1);
  const auto rs = copy(cfg);
  unsetenv("FAKE_ACL_FAIL");
  ASSERT_FALSE(rs.empty());
  for (const auto& r : rs) {
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_NE(r.reason.find("aclrtMemcpyAsync failed: error 507000"), std::string::npos)
        << r.reason;
  }
  for (const auto& r : copy(cfg)) EXPECT_EQ(r.status, Status::ok) << r.reason;  // recovers
}

TEST(Ascend, DeviceMemoryIsAccountedAndExhaustionIsAnError) {
  auto b = make_ascend_backend();
  const Bytes before = b->free_memory(MemKind::device, 0);
  auto buf = b->allocate(MemKind::device, 0, 64 << 20);
  EXPECT_EQ(b->free_memory(MemKind::device, 0), before - (64 << 20));
  try {
    b->allocate(MemKind::device, 0, 8ULL << 30);
    ADD_FAILURE() << "8 GiB on a 4 GiB NPU";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("207001"), std::string::npos) << e.what();
  }
  EXPECT_THROW(b->allocate(MemKind::device, 5, 16), UsageError);
}

// ---- the fake's rules -------------------------------------------------------

// The fake's own entry points (fake_runtime.hpp), found in the loaded library.
int rules_broken(std::string* first = nullptr) {
  using Fn = int (*)(char*, std::size_t);
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "fake_acl_rules_broken"));
  if (!fn) return -1;
  char buf[512] = {};
  const int n = fn(buf, sizeof buf);
  if (first) *first = buf;
  return n;
}
void clear_rules() {
  auto fn = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "fake_acl_clear_rules"));
  ASSERT_NE(fn, nullptr);
  fn();
}

constexpr int kStreamContext = 107003, kNoContext = 107002;

// The runtime, initialised, with the fake's rules read from a clean slate.
const ascend::AclApi& acl_up() {
  EXPECT_TRUE(probe_ascend().available);
  return ascend::api();
}

struct DeviceMemory {
  void* p = nullptr;
  DeviceMemory(int device, std::size_t n) {
    EXPECT_EQ(ascend::api().aclrtSetDevice(device), 0);
    EXPECT_EQ(ascend::api().aclrtMalloc(&p, n, 0), 0);
  }
  ~DeviceMemory() { (void)ascend::api().aclrtFree(p); }
};

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

// The backend's whole life, through finish_ascend(): no rule broken, no
// stream left, on 4 NPUs, bidirectional p2p and every copy case.
TEST(Ascend, ARunAndItsEndBreakNoRule) {
  setenv("FAKE_ASCEND_DEVICES", "4", 1);
  {
    CopyConfig cfg = config({copy_case::h2d, copy_case::d2h, copy_case::d2d, copy_case::p2p});
    cfg.methods = {Method::dma};
    cfg.bidir = true;
    for (const auto& r : copy(cfg)) EXPECT_EQ(r.status, Status::ok) << r.kase << ": " << r.reason;
  }
  finish_ascend();
  std::string first;
  EXPECT_EQ(rules_broken(&first), 0) << first;
  unsetenv("FAKE_ASCEND_DEVICES");
}

TEST(Ascend, APeerProbeThatFailsMeansNoPeer) {
  setenv("FAKE_ACL_FAIL", "aclrtDeviceCanAccessPeer", 1);
  auto b = make_ascend_backend();
  const Support s = b->peer_access(0, 1);
  unsetenv("FAKE_ACL_FAIL");
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("aclrtDeviceCanAccessPeer failed: error 507000"), std::string::npos)
      << s.reason;
}

}  // namespace
}  // namespace xb
