// The Ascend backend against the fake CANN runtime (tests/fake_cann), loaded
// through ASCEND_HOME_PATH as on a real machine: copy flows, waivers and a
// call failing in the middle of a run.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/ascend/ascend_backend.hpp"
#include "core/error.hpp"
#include "family/copy/copy_bench.hpp"

namespace xb {
namespace {

CopyConfig config(std::vector<CopyCase> cases) {
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
  EXPECT_EQ(b->devices()[0].memory, 4ULL << 30);
  EXPECT_TRUE(b->peer_access(0, 1).ok);
  EXPECT_FALSE(b->method_support(Method::core).ok);
}

TEST(Ascend, DmaCopiesVerifyCoreIsWaived) {
  for (const auto& r : copy(config({CopyCase::h2d, CopyCase::d2h, CopyCase::d2d}))) {
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
  CopyConfig cfg = config({CopyCase::h2d, CopyCase::p2p});
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
  CopyConfig cfg = config({CopyCase::h2d});
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

}  // namespace
}  // namespace xb
