// `xferbench gemm-ar`: fused GEMM + AllReduce with tile-level overlap.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "bench/gemm_ar/gemm_ar_bench.hpp"
#include "cli/cli.hpp"
#include "core/error.hpp"

namespace xb::cli {
namespace {

struct GemmArgs {
  CommonOptions common;
  GemmArConfig cfg;
  std::string mode = "all";
  int ranks = 0;
  bool no_check = false;
};

int run_gemm_ar_command(GemmArgs& a, int argc, char** argv) {
  a.cfg.mode = a.mode == "pipelined"    ? GemmArMode::pipelined
               : a.mode == "sequential" ? GemmArMode::sequential
                                        : GemmArMode::all;
  a.cfg.check = !a.no_check;
  const CommonOptions common = host_only(a.common, "gemm-ar");  // outlives the Output of `r`
  Ranked r =
      start_ranked(common, a.ranks, argc, argv, [&](Runtime& rt) { validate_gemm_ar(rt, a.cfg); });
  GemmArResult res = run_gemm_ar(*r.rt, a.cfg);
  const auto& s = a.cfg.shape;
  Report report{"gemm-ar",
                {},
                {{"M", s.M},
                 {"K", s.K},
                 {"N", s.N},
                 {"base_m", s.base_m},
                 {"base_n", s.base_n},
                 {"base_k", s.base_k},
                 {"step_k", s.step_k},
                 {"comm_sub_m", s.comm_sub_m},
                 {"compute_workers", std::int64_t{a.cfg.compute_workers}},
                 {"comm_workers", std::int64_t{a.cfg.comm_workers}},
                 {"mode", a.mode},
                 {"iters", std::int64_t{a.cfg.iters}},
                 {"warmup", std::int64_t{a.cfg.warmup}}},
                std::move(res.records),
                std::move(res.summary)};
  return r.report(std::move(report), common);
}

}  // namespace

Command add_gemm_ar(CLI::App& root, int argc, char** argv) {
  auto args = std::make_shared<GemmArgs>();
  auto& a = *args;
  auto& c = a.cfg;
  c.shape.M = c.shape.K = c.shape.N = 512;
  CLI::App* app =
      root.add_subcommand("gemm-ar", "fused GEMM + AllReduce with tile-level compute/comm overlap");
  app->add_option("-M", c.shape.M, "rows of A_i and C")->default_str("512");
  app->add_option("-K", c.shape.K, "inner dimension (multiple of baseK x stepK)")
      ->default_str("512");
  app->add_option("-N", c.shape.N, "columns of B and C")->default_str("512");
  app->add_option("--base-m", c.shape.base_m, "tile rows")->default_str("128");
  app->add_option("--base-n", c.shape.base_n, "tile columns")->default_str("128");
  app->add_option("--base-k", c.shape.base_k, "K step of the tile GEMM")->default_str("64");
  app->add_option("--step-k", c.shape.step_k, "K steps per load")->default_str("4");
  app->add_option("--comm-sub-m", c.shape.comm_sub_m,
                  "subtile rows of the reduce-scatter/all-gather")
      ->default_str("32");
  app->add_option("--compute-workers", c.compute_workers, "threads computing tiles per rank")
      ->default_str("1");
  app->add_option("--comm-workers", c.comm_workers, "threads moving tiles per rank")
      ->default_str("1");
  app->add_option("-n,--iters", c.iters, "timed iterations")
      ->check(CLI::Range(1, 100000))
      ->default_str("5");
  app->add_option("-w,--warmup", c.warmup, "warm-up iterations")
      ->check(CLI::Range(0, 100000))
      ->default_str("1");
  app->add_option("--mode", a.mode, "all (every metric), pipelined, sequential")
      ->check(CLI::IsMember({"all", "pipelined", "sequential"}))
      ->default_str("all");
  app->add_option("--atol", c.atol, "absolute tolerance (default 1e-3 x K)");
  app->add_option("--rtol", c.rtol, "relative tolerance")->default_str("0.01");
  app->add_option("--watchdog", c.watchdog_s,
                  "seconds a counter may stay stuck before it is an error")
      ->default_str("10");
  app->add_option("--ranks", a.ranks, "outside mpiexec: start N ranks under mpiexec")
      ->check(CLI::Range(1, 4096));
  app->add_flag("--no-check", a.no_check, "skip verification");
  add_common(*app, a.common);
  app->footer(
      R"(C_final = sum over ranks of A_i x B (A_i: M x K per rank, B: K x N shared), fp32, OpenBLAS per tile.
Examples:
  mpiexec -n 2 xferbench gemm-ar
  xferbench gemm-ar --ranks 4 -M 2048 -K 2048 -N 1024 --compute-workers 2 --comm-workers 1
  xferbench gemm-ar --ranks 2 --mode pipelined --format json -o gar.json)");
  return {app, [args, argc, argv] { return run_gemm_ar_command(*args, argc, argv); }};
}

}  // namespace xb::cli
