// The Ascend backend against the fake CANN runtime (tests/fake_cann), loaded
// through ASCEND_HOME_PATH as on a real machine: copy flows, waivers and a
// call failing in the middle of a run; and the fake's calling rules, each
// shown to catch the order the backend used to get wrong; HCCL's scatter
// and alltoallv on 1 rank and (forked) 2, and an older libhccl without
// them. (Each test runs in a process of its own under ctest.)
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/ascend/ascend_internal.hpp"
#include "coll/communicator.hpp"
#include "core/error.hpp"
#include "fake_test.hpp"
#include "family/copy/copy_bench.hpp"
#include "runtime/runtime.hpp"

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

// ---- scatter and alltoallv ---------------------------------------------------

// One MPI runtime per process (a singleton outside mpiexec: 1 rank).
Runtime& one_rank() {
  static const std::unique_ptr<Runtime> rt = make_mpi_runtime();
  return *rt;
}

// int32 values to and from NPU0's memory.
void put(void* dev, const std::vector<std::int32_t>& v) {
  ASSERT_EQ(ascend::api().aclrtSetDevice(0), 0);
  ASSERT_EQ(ascend::api().aclrtMemcpy(dev, v.size() * 4, v.data(), v.size() * 4, 1), 0);
}
std::vector<std::int32_t> get(const void* dev, std::size_t n) {
  std::vector<std::int32_t> v(n);
  EXPECT_EQ(ascend::api().aclrtSetDevice(0), 0);
  EXPECT_EQ(ascend::api().aclrtMemcpy(v.data(), n * 4, dev, n * 4, 2), 0);
  return v;
}
std::vector<std::int32_t> iota(std::size_t n, std::int32_t from) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<std::int32_t>(i);
  return v;
}

// A 1-rank HCCL communicator of NPU0, through the backend; and one made
// straight through the API, with a stream of its NPU.
struct BackendComm {
  std::unique_ptr<Backend> backend = make_ascend_backend();
  std::unique_ptr<Communicator> comm = backend->communicator(one_rank());
};
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

TEST(AscendColl, ScatterOnOneRankInPlaceAndNot) {
  BackendComm c;
  ASSERT_NE(ascend::hccl().api->HcclScatter, nullptr);
  EXPECT_TRUE(c.comm->supports(CollOp::scatter, DType::float64, RedOp::sum).ok);
  constexpr std::size_t n = 1000;
  auto send = c.backend->allocate(MemKind::device, 0, n * 4);
  auto recv = c.backend->allocate(MemKind::device, 0, n * 4);
  put(send->data(), iota(n, 7));
  put(recv->data(), std::vector<std::int32_t>(n, -1));
  c.comm->scatter(send->data(), recv->data(), n, DType::int32, 0);
  c.comm->synchronize();
  EXPECT_EQ(get(recv->data(), n), iota(n, 7));
  // In place (recv = send + rank * count): HCCL is not given overlapping
  // buffers (the fake refuses them), and the root's slot stays its result.
  c.comm->reserve(n * 4);
  c.comm->scatter(send->data(), send->data(), n, DType::int32, 0);
  c.comm->synchronize();
  EXPECT_EQ(get(send->data(), n), iota(n, 7));
  c.comm.reset();
  EXPECT_EQ(rules_broken(), 0);
}

TEST(AscendColl, AlltoallvOnOneRankMovesTheBlockToItsDisplacement) {
  BackendComm c;
  EXPECT_TRUE(c.comm->supports(CollOp::alltoallv, DType::bf16, RedOp::sum).ok);
  auto send = c.backend->allocate(MemKind::device, 0, 10 * 4);
  auto recv = c.backend->allocate(MemKind::device, 0, 16 * 4);
  put(send->data(), iota(10, 100));
  put(recv->data(), std::vector<std::int32_t>(16, -1));
  const std::size_t sc[] = {4}, sd[] = {3}, rc[] = {4}, rd[] = {5};
  for (int i = 0; i < 2; ++i)  // the counts' host arrays are reused
    c.comm->alltoallv(send->data(), sc, sd, recv->data(), rc, rd, DType::int32);
  c.comm->synchronize();
  std::vector<std::int32_t> want(16, -1);
  for (int i = 0; i < 4; ++i) want[5 + i] = 103 + i;
  EXPECT_EQ(get(recv->data(), 16), want);
  const std::size_t two[] = {1, 1};
  EXPECT_THROW(c.comm->alltoallv(send->data(), two, sd, recv->data(), rc, rd, DType::int32),
               UsageError);
  c.comm.reset();
  EXPECT_EQ(rules_broken(), 0);
}

TEST(AscendColl, OverlappingAlltoallvBuffersAreHcclsParameterError) {
  BackendComm c;
  auto buf = c.backend->allocate(MemKind::device, 0, 64);
  const std::size_t sc[] = {4}, sd[] = {0}, rc[] = {4}, rd[] = {2};
  try {
    c.comm->alltoallv(buf->data(), sc, sd, buf->data(), rc, rd, DType::int32);
    ADD_FAILURE() << "overlapping alltoallv buffers were taken";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("HcclAlltoAllV failed: HCCL error 1 (parameter error)"),
              std::string::npos)
        << e.what();
  }
  c.comm->synchronize();
}

TEST(AscendColl, HcclHasNoGather) {
  BackendComm c;
  EXPECT_EQ(c.comm->supports(CollOp::gather, DType::float32, RedOp::sum).reason,
            "hccl has no gather");
  try {
    c.comm->gather(nullptr, nullptr, 4, DType::float32, 0);
    ADD_FAILURE() << "gather ran";
  } catch (const NotSupported& e) {
    EXPECT_STREQ(e.what(), "hccl has no gather");
  }
}

// The fake's rules for the two, straight through the API.
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

// An older CANN (tests/fake_cann_oldhccl, next to ASCEND_HOME_PATH's
// fake_cann): its libhccl loads without the two, which are then waived.
TEST(AscendColl, ALibhcclWithoutScatterOrAlltoallvWaivesThem) {
  if (dlopen("libascendcl.so", RTLD_NOW | RTLD_NOLOAD) ||
      dlopen("libhccl.so", RTLD_NOW | RTLD_NOLOAD))
    GTEST_SKIP() << "CANN is loaded in this process already: run this test on its own (ctest does)";
  const char* home = std::getenv("ASCEND_HOME_PATH");
  ASSERT_NE(home, nullptr);
  setenv("ASCEND_HOME_PATH", (std::string(home) + "_oldhccl").c_str(), 1);
  BackendComm c;
  const auto& l = ascend::hccl();
  ASSERT_NE(l.api, nullptr) << l.error;
  EXPECT_NE(l.path.find("fake_cann_oldhccl"), std::string::npos) << l.path;
  EXPECT_EQ(l.api->HcclScatter, nullptr);
  EXPECT_EQ(l.api->HcclAlltoAllV, nullptr);
  EXPECT_EQ(c.comm->supports(CollOp::scatter, DType::float32, RedOp::sum).reason,
            "this libhccl has no HcclScatter");
  EXPECT_EQ(c.comm->supports(CollOp::alltoallv, DType::float32, RedOp::sum).reason,
            "this libhccl has no HcclAlltoAllV");
  auto buf = c.backend->allocate(MemKind::device, 0, 4096);
  char* p = static_cast<char*>(buf->data());
  try {
    c.comm->scatter(p, p + 64, 16, DType::float32, 0);
    ADD_FAILURE() << "scatter ran";
  } catch (const NotSupported& e) {
    EXPECT_STREQ(e.what(), "this libhccl has no HcclScatter");
  }
  const std::size_t cnt[] = {16}, zero[] = {0};
  try {
    c.comm->alltoallv(p, cnt, zero, p + 256, cnt, zero, DType::float32);
    ADD_FAILURE() << "alltoallv ran";
  } catch (const NotSupported& e) {
    EXPECT_STREQ(e.what(), "this libhccl has no HcclAlltoAllV");
  }
  c.comm->allreduce(p, p + 64, 16, DType::float32, RedOp::sum);  // the rest still runs
  c.comm->synchronize();
}

// ---- two ranks, one process each --------------------------------------------

#define CHILD_CHECK(call)                                                  \
  do {                                                                     \
    const int e_ = (call);                                                 \
    if (e_ != 0)                                                           \
      return std::string(#call) + " = " + std::to_string(e_) + " (line " + \
             std::to_string(__LINE__) + ")";                               \
  } while (0)

// Rank `rank` of 2 on NPU `rank`: scatter from root 1, an uneven alltoallv,
// then one whose receive count differs from what its sender sends. "" or
// what went wrong.
std::string two_rank_child(int rank, int info_in, int info_out) {
  const BackendStatus status = probe_ascend();
  if (!status.available) return status.reason;
  const auto& a = ascend::api();
  if (!ascend::hccl().api) return ascend::hccl().error;
  const auto& h = *ascend::hccl().api;
  if (!h.HcclScatter || !h.HcclAlltoAllV) return "no HcclScatter or HcclAlltoAllV";
  CHILD_CHECK(a.aclrtSetDevice(rank));
  ascend::HcclRootInfo info{};
  if (rank == 0) {
    CHILD_CHECK(h.HcclGetRootInfo(&info));
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
  void* stream = nullptr;
  CHILD_CHECK(h.HcclCommInitRootInfo(2, &info, static_cast<std::uint32_t>(rank), &comm));
  CHILD_CHECK(a.aclrtCreateStream(&stream));
  void *send = nullptr, *recv = nullptr;
  CHILD_CHECK(a.aclrtMalloc(&send, 1 << 20, 0));
  CHILD_CHECK(a.aclrtMalloc(&recv, 1 << 20, 0));
  auto to_device = [&](void* dev, const std::vector<std::int32_t>& v) {
    return a.aclrtMemcpy(dev, 1 << 20, v.data(), v.size() * 4, 1);
  };
  auto from_device = [&](const void* dev, std::size_t n) {
    std::vector<std::int32_t> v(n);
    if (a.aclrtMemcpy(v.data(), n * 4, dev, n * 4, 2) != 0) v.clear();
    return v;
  };

  // scatter: root 1 holds 2 * count; rank 0 passes no send.
  constexpr std::size_t count = 1000;
  CHILD_CHECK(to_device(send, iota(2 * count, 7)));
  CHILD_CHECK(to_device(recv, std::vector<std::int32_t>(count, -1)));
  CHILD_CHECK(
      h.HcclScatter(rank == 1 ? send : nullptr, recv, count, ascend::kHcclInt32, 1, comm, stream));
  CHILD_CHECK(a.aclrtSynchronizeStream(stream));
  if (from_device(recv, count) != iota(count, 7 + rank * static_cast<std::int32_t>(count)))
    return "scatter: rank " + std::to_string(rank) + " did not receive its block";

  // alltoallv: rank s sends 100(s+1) + 10d + 1 elements to rank d, the
  // blocks in reverse order with gaps of 5; receive blocks in order, gaps of 3.
  auto sent = [](int src, int dst) {
    const int n = 100 * (src + 1) + 10 * dst + 1;
    return static_cast<std::uint64_t>(n);
  };
  auto value = [](int src, int dst, std::uint64_t i) {
    return static_cast<std::int32_t>(1000000 * src + 10000 * dst + static_cast<int>(i));
  };
  std::uint64_t sc[2], sd[2], rc[2], rd[2];
  std::uint64_t at = 5;
  for (int d = 1; d >= 0; --d) {
    sc[d] = sent(rank, d);
    sd[d] = at;
    at += sc[d] + 5;
  }
  std::vector<std::int32_t> in(at, -2);
  for (int d = 0; d < 2; ++d)
    for (std::uint64_t i = 0; i < sc[d]; ++i) in[sd[d] + i] = value(rank, d, i);
  std::uint64_t rat = 3;
  for (int s = 0; s < 2; ++s) {
    rc[s] = sent(s, rank);
    rd[s] = rat;
    rat += rc[s] + 3;
  }
  std::vector<std::int32_t> want(rat, -1);
  for (int s = 0; s < 2; ++s)
    for (std::uint64_t i = 0; i < rc[s]; ++i) want[rd[s] + i] = value(s, rank, i);
  CHILD_CHECK(to_device(send, in));
  CHILD_CHECK(to_device(recv, std::vector<std::int32_t>(rat, -1)));
  CHILD_CHECK(h.HcclAlltoAllV(send, sc, sd, ascend::kHcclInt32, recv, rc, rd, ascend::kHcclInt32,
                              comm, stream));
  for (auto& x : sc) x = 0;  // read by the call: later changes do not matter
  CHILD_CHECK(a.aclrtSynchronizeStream(stream));
  if (from_device(recv, rat) != want)
    return "alltoallv: rank " + std::to_string(rank) + " received other data";

  // Rank 1 expects one element fewer from rank 0 than rank 0 sends: its
  // stream reports the failed work (507000), rank 0's none.
  for (int d = 0; d < 2; ++d) sc[d] = sent(rank, d);
  if (rank == 1) rc[0] -= 1;
  CHILD_CHECK(h.HcclAlltoAllV(send, sc, sd, ascend::kHcclInt32, recv, rc, rd, ascend::kHcclInt32,
                              comm, stream));
  const int mismatch = a.aclrtSynchronizeStream(stream);
  if (mismatch != (rank == 1 ? 507000 : 0))
    return "alltoallv with a short receive: rank " + std::to_string(rank) + " synchronized with " +
           std::to_string(mismatch);

  CHILD_CHECK(h.HcclCommDestroy(comm));
  CHILD_CHECK(a.aclrtDestroyStream(stream));
  CHILD_CHECK(a.aclrtFree(send));
  CHILD_CHECK(a.aclrtFree(recv));
  std::string first;
  if (rules_broken(&first) != 0) return "rule broken: " + first;
  return "";
}

TEST(FakeHccl, TwoRanksScatterAndAlltoallvStraightThroughTheApi) {
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
      const std::string err = two_rank_child(r, info[0], info[1]);
      close(r == 0 ? info[1] : info[0]);  // rank 1 sees the end of a rank 0 that failed
      if (!err.empty()) (void)!write(report[r][1], err.data(), err.size());
      _exit(err.empty() ? 0 : 1);
    }
  }
  close(info[0]);
  close(info[1]);
  close(report[0][1]);
  close(report[1][1]);
  // A rank that failed leaves its peer waiting in the fake's barrier: that
  // one is stopped, as are both after 60 s.
  int status[2] = {0, 0};
  bool done[2] = {false, false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto failed = [&](int r) {
    return done[r] && !(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0);
  };
  while (!done[0] || !done[1]) {
    for (int r = 0; r < 2; ++r)
      if (!done[r] && waitpid(pid[r], &status[r], WNOHANG) == pid[r]) done[r] = true;
    if (failed(0) || failed(1) || std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < 2; ++r)
        if (!done[r]) {
          kill(pid[r], SIGKILL);
          waitpid(pid[r], &status[r], 0);
          done[r] = true;
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  shm_unlink(("/xb_fake_hccl_" + std::to_string(pid[0]) + "_0").c_str());  // left by a failure
  for (int r = 0; r < 2; ++r) {
    std::string err;
    char buf[256];
    for (ssize_t n; (n = read(report[r][0], buf, sizeof buf)) > 0;)
      err.append(buf, static_cast<std::size_t>(n));
    close(report[r][0]);
    EXPECT_FALSE(failed(r)) << "rank " << r << " (status " << status[r] << "): " << err;
    EXPECT_EQ(err, "") << "rank " << r;
  }
}

}  // namespace
}  // namespace xb
