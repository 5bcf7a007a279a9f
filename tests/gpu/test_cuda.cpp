// CUDA backend tests (CTest label `gpu`): each skips, with the reason,
// where no GPU is usable.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.hpp"
#include "core/error.hpp"
#include "family/copy/copy_bench.hpp"

namespace xb {
namespace {

#define XB_NEED_GPU()                                              \
  do {                                                             \
    const BackendStatus s = probe_cuda();                          \
    if (!s.available) GTEST_SKIP() << "no GPU here: " << s.reason; \
  } while (0)

std::vector<Record> copy_all(const CopyConfig& cfg) {
  auto b = make_cuda_backend();
  Registry reg;
  register_copy(reg);
  validate_copy(*b, cfg);
  return run_copy(*b, reg, cfg);
}

CopyConfig small_config() {
  CopyConfig cfg;
  cfg.cases = {copy_case::h2d, copy_case::d2h, copy_case::d2d};
  cfg.sizes = {16, 4096, (1 << 20) + 3, 16 << 20};  // odd sizes take the byte tail
  cfg.p2p_sizes = {1 << 20};
  cfg.iters = cfg.p2p_iters = 3;
  cfg.warmup = 1;
  cfg.device = 0;
  return cfg;
}

void expect_all_ok(const std::vector<Record>& rs) {
  ASSERT_FALSE(rs.empty());
  for (const auto& r : rs) {
    EXPECT_EQ(r.status, Status::ok)
        << r.kase << " " << r.method << " " << r.bytes << ": " << r.reason;
    EXPECT_TRUE(r.verified) << r.kase << " " << r.method << " " << r.bytes;
    EXPECT_GT(r.gbps_median, 0.0) << r.kase << " " << r.method << " " << r.bytes;
  }
}

TEST(Cuda, DevicesHaveNamesMemoryAndClock) {
  XB_NEED_GPU();
  auto b = make_cuda_backend();
  ASSERT_FALSE(b->devices().empty());
  for (const auto& d : b->devices()) {
    EXPECT_NE(d.name.find("GPU"), std::string::npos);
    EXPECT_GT(d.memory, 0u);
    EXPECT_GT(d.clock_hz, 0.0);
    EXPECT_EQ(b->link_type(d.id, d.id), "X");
  }
  EXPECT_GT(b->free_memory(MemKind::device, 0), 0u);
}

TEST(Cuda, CopyStagedThroughSharedMemoryVerifies) {
  XB_NEED_GPU();
  CopyConfig cfg = small_config();
  cfg.copier.tile = 64 * 1024;
  expect_all_ok(copy_all(cfg));
}

TEST(Cuda, CopyDirectKernelsAndFewBlocksVerify) {
  XB_NEED_GPU();
  CopyConfig cfg = small_config();
  cfg.copier.tile = 0;
  cfg.copier.threads = 3;
  expect_all_ok(copy_all(cfg));
}

TEST(Cuda, PageableHostMemoryCoreIsWaivedDmaRuns) {
  XB_NEED_GPU();
  CopyConfig cfg = small_config();
  cfg.cases = {copy_case::h2d, copy_case::d2h};
  cfg.host_mem = MemKind::pageable;
  for (const auto& r : copy_all(cfg)) {
    if (r.method == "core") {
      EXPECT_EQ(r.status, Status::waived);
      EXPECT_NE(r.reason.find("pinned"), std::string::npos) << r.reason;
    } else {
      EXPECT_EQ(r.status, Status::ok) << r.reason;
    }
  }
}

TEST(Cuda, P2pRunsOrSaysWhy) {
  XB_NEED_GPU();
  CopyConfig cfg = small_config();
  cfg.cases = {copy_case::p2p};
  cfg.device.reset();
  cfg.bidir = true;
  auto b = make_cuda_backend();
  for (const auto& r : copy_all(cfg)) {
    if (b->devices().size() < 2) {
      EXPECT_EQ(r.status, Status::waived);
    } else if (r.status != Status::ok) {
      EXPECT_EQ(r.status, Status::waived);
      EXPECT_NE(r.reason.find("peer"), std::string::npos) << r.reason;
    } else {
      EXPECT_TRUE(r.verified);
    }
  }
}

TEST(Cuda, ConcurrentCopiesAreTimedFromACommonStart) {
  XB_NEED_GPU();
  auto b = make_cuda_backend();
  const Bytes n = 64ULL << 20;
  auto h = b->allocate(MemKind::pinned, -1, n);
  auto d1 = b->allocate(MemKind::device, 0, n);
  auto d2 = b->allocate(MemKind::device, 0, n);
  auto h2 = b->allocate(MemKind::pinned, -1, n);
  auto c = b->copier(Method::dma, {});
  const CopyOp ops[] = {{h.get(), d1.get(), n}, {d2.get(), h2.get(), n}};
  const CopyTiming t = c->run(ops);
  ASSERT_EQ(t.op_us.size(), 2u);
  for (double us : t.op_us) {
    EXPECT_GT(us, 0.0);
    EXPECT_LE(us, t.batch_us);
  }
}

// An export is forgotten once its memory is freed (CUDA review 2, N13: the
// list only grew). While the buffer lives, this process imports its own
// handle as the memory itself; after the free and another export, the old
// handle is no longer known, and CUDA refuses a process its own handle.
TEST(Cuda, AnExportOfFreedMemoryIsForgotten) {
  XB_NEED_GPU();
  auto b = make_cuda_backend();
  const Bytes n = 1 << 20;
  auto keep = b->allocate(MemKind::device, 0, n);
  std::string old;
  {
    auto gone = b->allocate(MemKind::device, 0, n);
    old = b->export_buffer(*gone);
    EXPECT_EQ(b->import_buffer(old, 0, n)->data(), gone->data());
  }
  (void)b->export_buffer(*keep);
  EXPECT_THROW((void)b->import_buffer(old, 0, n), RuntimeError);
  EXPECT_NE(b->import_buffer(b->export_buffer(*keep), 0, n), nullptr);
}

TEST(Cuda, BadTileIsAUsageError) {
  XB_NEED_GPU();
  auto b = make_cuda_backend();
  EXPECT_THROW(b->copier(Method::core, {0, 100}), UsageError);          // not a multiple of 16
  EXPECT_THROW(b->copier(Method::core, {0, 64ULL << 20}), UsageError);  // more than shared memory
}

}  // namespace
}  // namespace xb
