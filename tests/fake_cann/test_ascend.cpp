// The Ascend backend against the fake CANN runtime (tests/fake_cann), loaded
// through ASCEND_HOME_PATH as on a real machine: copy flows, waivers, a call
// failing in the middle of a run, a run whose end breaks no rule; HCCL's
// scatter and alltoallv on 1 rank, and an older libhccl without them. The
// fake's own rules, straight through its API: test_fake_rules.cpp and the
// test_fake_*.cpp beside it. (Each test runs in a process of its own under
// ctest.)
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
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

// A 1-rank HCCL communicator of NPU0, through the backend.
struct BackendComm {
  std::unique_ptr<Backend> backend = make_ascend_backend();
  std::unique_ptr<Communicator> comm = backend->communicator(one_rank());
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

}  // namespace
}  // namespace xb
