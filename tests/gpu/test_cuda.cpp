// CUDA backend tests (CTest label `gpu`): each skips, with the reason,
// where no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "backend/cuda/cuda_backend.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/timer.hpp"
#include "family/copy/copy_bench.hpp"

namespace xb {
namespace {

// Whether nvidia-smi lists a GPU (the driver sees one).
bool driver_lists_gpu() {
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return false;
  char line[256];
  bool gpu = false;
  while (std::fgets(line, sizeof line, p)) gpu = gpu || std::strncmp(line, "GPU ", 4) == 0;
  pclose(p);
  return gpu;
}

// Skips where no GPU is here; fails where one is here but unusable (N7).
#define XB_NEED_GPU()                                                                       \
  do {                                                                                      \
    const BackendStatus s = probe_cuda();                                                   \
    if (s.broken) FAIL() << "a GPU is here but unusable: " << s.reason;                     \
    if (!s.available && driver_lists_gpu())                                                 \
      FAIL() << "nvidia-smi lists a GPU but the cuda backend is unavailable: " << s.reason; \
    if (!s.available) GTEST_SKIP() << "no GPU here: " << s.reason;                          \
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

// Two copies of a batch, an h2d and a d2h of equal size by the copy
// engines, start together at the latch and share nothing but the link,
// which is full duplex: each takes about as long as the other, and the
// batch not much longer than either. batch_us is the longest op by
// construction, so the host's clock around the whole run is held to the
// same bound: copies that did not overlap (one queued behind the other, or
// started apart) would take about twice as long. Medians of 5.
TEST(Cuda, ConcurrentCopiesAreTimedFromACommonStart) {
  XB_NEED_GPU();
  auto b = make_cuda_backend();
  const Bytes n = 256ULL << 20;
  auto h = b->allocate(MemKind::pinned, -1, n);
  auto d1 = b->allocate(MemKind::device, 0, n);
  auto d2 = b->allocate(MemKind::device, 0, n);
  auto h2 = b->allocate(MemKind::pinned, -1, n);
  auto c = b->copier(Method::dma, {});
  const CopyOp ops[] = {{h.get(), d1.get(), n}, {d2.get(), h2.get(), n}};
  for (int i = 0; i < 2; ++i) c->run(ops);
  std::vector<double> up, down, batch, wall;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    const CopyTiming t = c->run(ops);
    wall.push_back(elapsed_us(t0, Clock::now()));
    ASSERT_EQ(t.op_us.size(), 2u);
    up.push_back(t.op_us[0]);
    down.push_back(t.op_us[1]);
    batch.push_back(t.batch_us);
  }
  const double u = compute_stats(up).median, d = compute_stats(down).median;
  const double one = std::min(u, d);
  EXPECT_NEAR(u, d, 0.1 * std::max(u, d)) << "h2d " << u << " us, d2h " << d << " us";
  EXPECT_LT(compute_stats(batch).median, 1.5 * one);
  EXPECT_LT(compute_stats(wall).median, 1.5 * one) << "on the host's clock";
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
