#pragma once
// `xferbench gemm-ar`: C_final = sum over ranks of A_i x B with tile-level
// overlap of the GEMM and the AllReduce (seed 002, on the host backend):
// compute workers run OpenBLAS sgemm per output tile and signal per-worker
// ready queues; comm workers reduce-scatter each tile into its owner's
// symmetric window subtile by subtile and all-gather reduced subtiles to
// every rank as soon as all contributions are in.
#include "core/record.hpp"
#include "gemm_ar/tiling.hpp"
#include "runtime/runtime.hpp"

namespace xb {

enum class GemmArMode { all, pipelined, sequential };

struct GemmArConfig {
  GemmShape shape;
  int compute_workers = 1;
  int comm_workers = 1;
  int iters = 5;
  int warmup = 1;
  GemmArMode mode = GemmArMode::all;
  bool check = true;
  double atol = -1;  // default 1e-3 * K
  double rtol = 1e-2;
  double watchdog_s = 10;
  std::int64_t drop_tile = -1;  // test seam: this tile is never signalled
};

// Collective; throws UsageError on every rank for bad shapes or one rank.
void validate_gemm_ar(Runtime& rt, const GemmArConfig& cfg);

struct GemmArResult {
  std::vector<Record> records;  // one per mode measured
  Params summary;
};

// Collective. Throws RuntimeError naming the tile when the watchdog fires.
GemmArResult run_gemm_ar(Runtime& rt, const GemmArConfig& cfg);

}  // namespace xb
