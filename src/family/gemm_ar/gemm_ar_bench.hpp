#pragma once
// `xferbench gemm-ar`: C_final = sum over ranks of A_i x B with tile-level
// overlap of the GEMM and the AllReduce (as in pto-isa's GEMM+AllReduce example). On the host
// backend compute workers run OpenBLAS sgemm per output tile and signal per-worker
// ready queues; comm workers reduce-scatter each tile into its owner's
// symmetric window subtile by subtile and all-gather reduced subtiles to
// every rank as soon as all contributions are in. On a device backend the
// backend's fused operator (coll/fused.hpp) does the same on the device.
#include "backend/backend.hpp"
#include "coll/dtype.hpp"
#include "coll/fused.hpp"
#include "coll/gemm_tiling.hpp"
#include "core/record.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// The fields gemm-ar adds to its summary record (case gemm_ar).
namespace gemm_field {
inline constexpr FieldKey<std::int64_t> M{"M"};
inline constexpr FieldKey<std::int64_t> K{"K"};
inline constexpr FieldKey<std::int64_t> N{"N"};
inline constexpr FieldKey<std::int64_t> tiles{"tiles"};
inline constexpr FieldKey<std::int64_t> waves{"waves"};
inline constexpr FieldKey<std::int64_t> window_bytes{"window_bytes"};
inline constexpr FieldKey<double> compute_us{"compute_us"};
inline constexpr FieldKey<double> comm_us{"comm_us"};
inline constexpr FieldKey<double> library_allreduce_us{"library_allreduce_us"};
inline constexpr FieldKey<double> sequential_us{"sequential_us"};
inline constexpr FieldKey<double> pipelined_us{"pipelined_us"};
inline constexpr FieldKey<double> compute_done_us{"compute_done_us"};
inline constexpr FieldKey<double> speedup{"speedup"};
inline constexpr FieldKey<double> time_saved_us{"time_saved_us"};
inline constexpr FieldKey<double> overlap_eff{"overlap_eff"};
inline constexpr FieldKey<double> ideal_us{"ideal_us"};
inline constexpr FieldKey<double> ideal_ratio{"ideal_ratio"};
inline constexpr FieldKey<double> gflops{"gflops"};
inline constexpr FieldKey<double> comm_gbps{"comm_gbps"};
inline constexpr FieldKey<double> max_err{"max_err"};
inline constexpr FieldKey<std::int64_t> wrong{"wrong"};
inline constexpr FieldKey<std::string> overlap_note{"overlap_note"};
// Interference records (a --comm-blocks list on a device backend).
inline constexpr FieldKey<std::int64_t> comm_blocks{"comm_blocks"};
inline constexpr FieldKey<double> compute_alone_us{"compute_alone_us"};
inline constexpr FieldKey<double> comm_alone_us{"comm_alone_us"};
inline constexpr FieldKey<double> compute_both_us{"compute_both_us"};
inline constexpr FieldKey<double> comm_both_us{"comm_both_us"};
inline constexpr FieldKey<double> compute_slowdown{"compute_slowdown"};
inline constexpr FieldKey<double> comm_slowdown{"comm_slowdown"};
}  // namespace gemm_field

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
  std::vector<int> cpus;        // host: worker_cpus(), or empty (unbound)
  // Device backends only.
  DType dtype = DType::float32;        // of A and B (the host computes float only)
  CommEngine engine = CommEngine::sm;  // --comm-engine
  std::vector<int> comm_blocks{8};     // --comm-blocks; a list: the interference sweep
  int wave_rows = 0;                   // --wave-rows; 0: the plan's default
};

// The fused operator's configuration for `nranks` ranks and `blocks` comm blocks.
FusedConfig fused_config(const GemmArConfig& cfg, int nranks, int blocks);

// What the overlap of one run means, from the medians (us) of compute alone
// (c), communication alone (m), sequential (s) and pipelined (p).
// efficiency = (c + m - p) / min(c, m) is a figure only when pipelined gained
// (p < s), did not beat the longer phase alone (p >= max(c, m): else the
// phases ran under different conditions) and the shorter phase is not lost
// in the noise (min >= 2% of max); otherwise `text` says why there is none.
struct OverlapVerdict {
  bool figure = false;
  double efficiency = 0;
  std::string text;  // "overlap efficiency 87.4%" or the reason for no figure
};
OverlapVerdict overlap_verdict(double c, double m, double s, double p);

// Default workers per rank from the cores of the host shared by its ranks:
// one comm worker per 8 cores (at least one), the rest compute (at least
// one). {compute, comm}.
std::pair<int, int> default_workers(int cores, int ranks_on_host);

// The CPU of each of `workers` workers of this rank (compute workers first,
// then comm), one CPU each, so workers neither share a core nor migrate:
// from the CPUs this process may run on (`allowed`, ascending); when that is
// the whole host (`online` CPUs: mpiexec did not bind), this rank takes the
// local_rank-th share of ranks_on_host. Empty (leave the workers unbound)
// when the workers do not fit their share. Pure.
std::vector<int> worker_cpus(const std::vector<int>& allowed, int online, int local_rank,
                             int ranks_on_host, int workers);

// Collective; throws UsageError on every rank for bad shapes or one rank.
void validate_gemm_ar(Runtime& rt, const GemmArConfig& cfg);

struct GemmArResult {
  std::vector<Record> records;  // one per phase measured, then the gemm_ar summary record
  std::string placement;        // device backends: where this rank ran ("GPU0 (...)")
  std::string library_note;     // why no library baseline ran, or ""
};

// Collective. Throws RuntimeError naming the tile when the watchdog fires.
GemmArResult run_gemm_ar(Runtime& rt, const GemmArConfig& cfg);
// Whether this build has the BLAS host gemm-ar multiplies with (OpenBLAS is
// optional; without it the host runs report waived).
bool host_blas();

// Collective, on a device backend through Backend::fused_gemm_allreduce
// (validated with fused_fits on every rank first): the same phases and
// summary as the host; with more than one --comm-blocks value, the
// interference sweep instead (one record per value, then the summary).
GemmArResult run_gemm_ar_device(Runtime& rt, Backend& be, const GemmArConfig& cfg);

}  // namespace xb
