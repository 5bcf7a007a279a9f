#include <gtest/gtest.h>

#include "core/error.hpp"
#include "family/gemm_ar/gemm_ar_bench.hpp"
#include "mpi_env.hpp"

namespace xb {
namespace {

GemmArConfig small() {
  GemmArConfig c;
  c.shape.M = 200;  // not multiples of the tiles: padded
  c.shape.K = 256;
  c.shape.N = 136;
  c.shape.base_m = 64;
  c.shape.base_n = 64;
  c.shape.comm_sub_m = 16;
  c.compute_workers = 2;
  c.comm_workers = 2;
  c.iters = 2;
  c.warmup = 1;
  return c;
}

double field(const Record& r, const char* k) {
  for (const auto& [name, v] : r.extra)
    if (name == k)
      return std::holds_alternative<double>(v) ? std::get<double>(v)
                                               : static_cast<double>(std::get<std::int64_t>(v));
  return -1;
}

}  // namespace

TEST(GemmAr, VerifiesOnEveryRankAndReportsEveryMetric) {
  if (!host_blas())
    GTEST_SKIP() << "host gemm-ar multiplies with OpenBLAS, which this build lacks (its runs "
                    "report waived)";
  Runtime& rt = test_runtime();
  const GemmArConfig cfg = small();
  validate_gemm_ar(rt, cfg);
  const GemmArResult res = run_gemm_ar(rt, cfg);
  ASSERT_EQ(res.records.size(),
            6u);  // compute, comm, library_allreduce, sequential, pipelined, gemm_ar
  const Record& sum = res.records.back();
  EXPECT_EQ(sum.kase, "gemm_ar");
  EXPECT_EQ(sum.status, Status::ok) << sum.reason;
  EXPECT_EQ(sum.verified, std::optional<bool>(true));
  EXPECT_EQ(field(sum, "wrong"), 0);
  for (const char* k :
       {"compute_us", "comm_us", "library_allreduce_us", "sequential_us", "pipelined_us",
        "compute_done_us", "speedup", "time_saved_us", "overlap_eff", "ideal_us", "ideal_ratio",
        "gflops", "comm_gbps", "max_err", "window_bytes"})
    EXPECT_NE(field(sum, k), -1) << k;
  EXPECT_GT(field(sum, "gflops"), 0);
}

TEST(GemmAr, OtherShapesAndModes) {
  if (!host_blas())
    GTEST_SKIP() << "host gemm-ar multiplies with OpenBLAS, which this build lacks (its runs "
                    "report waived)";
  Runtime& rt = test_runtime();
  GemmArConfig cfg = small();
  cfg.shape.M = 64;
  cfg.shape.N = 320;
  cfg.compute_workers = 1;
  cfg.comm_workers = 1;
  cfg.mode = GemmArMode::pipelined;
  const GemmArResult res = run_gemm_ar(rt, cfg);
  EXPECT_EQ(res.records.back().verified, std::optional<bool>(true));
  cfg.mode = GemmArMode::sequential;
  EXPECT_EQ(run_gemm_ar(rt, cfg).records.back().verified, std::optional<bool>(true));
}

TEST(GemmAr, ADroppedTileIsCaughtByTheWatchdog) {
  if (!host_blas())
    GTEST_SKIP() << "host gemm-ar multiplies with OpenBLAS, which this build lacks (its runs "
                    "report waived)";
  Runtime& rt = test_runtime();
  GemmArConfig cfg = small();
  cfg.mode = GemmArMode::pipelined;
  cfg.warmup = 0;
  cfg.iters = 1;
  cfg.drop_tile = 5;
  cfg.watchdog_s = 1.5;
  try {
    run_gemm_ar(rt, cfg);
    ADD_FAILURE() << "a dropped tile went unnoticed";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("watchdog"), std::string::npos) << e.what();
  }
  rt.barrier();
  cfg.drop_tile = -1;  // and the next run is healthy again
  EXPECT_EQ(run_gemm_ar(rt, cfg).records.back().verified, std::optional<bool>(true));
}

TEST(GemmAr, BadConfigOnEveryRank) {
  Runtime& rt = test_runtime();
  GemmArConfig cfg = small();
  cfg.shape.K = 100;
  EXPECT_THROW(validate_gemm_ar(rt, cfg), UsageError);
  cfg = small();
  cfg.compute_workers = 64;
  EXPECT_THROW(validate_gemm_ar(rt, cfg), UsageError);
}

}  // namespace xb
