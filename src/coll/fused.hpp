#pragma once
// Fused GEMM + AllReduce on an accelerator (pto-isa's GEMM+AllReduce example): C = sum over
// ranks of A_i x B, computed in waves of output tiles while the tiles of finished
// waves are reduce-scattered to their owner ranks and all-gathered back.
//
// This header is the device-independent part: the plan (waves, owners, the
// work of each comm block in order, the window layout) and the counter
// protocol, as pure functions tested with no device, plus the interface a
// backend implements (Backend::fused_gemm_allreduce).
//
// Counter protocol. Counters only grow; iteration (epoch) e >= 1 of any
// phase that communicates waits for targets of e, so nothing is reset
// between iterations:
//  - wave_ready[w] (local): set to e once wave w's GEMM has finished;
//  - arrival[tl * subtiles + s] (in the owner's window): +1 from each source
//    rank after it wrote its contribution to owned tile tl, subtile s, into
//    its stage slot; the owner reduces once it reaches arrival_target(e);
//  - done (in each rank's window): +1 for every subtile written into that
//    rank's output; the rank's output is complete at done_target(e).
// A comm block works through its items in wave order, each wave's pushes
// before its gathers. A gather of wave w waits only for pushes of wave w,
// which no rank makes wait on anything but its own GEMM, so the order cannot
// deadlock. Every wait has a deadline; the first one missed stops the rank
// with an error word naming the tile and subtile.
#include <cstdint>
#include <string>
#include <vector>

#include "coll/dtype.hpp"
#include "coll/gemm_tiling.hpp"

namespace xb {

// How the fused path moves tiles: a persistent kernel on --comm-blocks SMs
// (sm), or copy engines into peer windows plus a small reduce kernel (ce).
enum class CommEngine { sm, ce };
const char* to_string(CommEngine e);

struct FusedConfig {
  GemmShape shape;
  int nranks = 2;
  DType dtype = DType::half;  // of A and B; accumulation and C are fp32
  CommEngine engine = CommEngine::sm;
  int comm_blocks = 8;          // blocks of the comm kernel (sm) or of the reduce kernel (ce)
  int wave_rows = 0;            // tile rows per wave; 0: enough tiles to fill the compute SMs
  double watchdog_s = 10;       // a counter stuck this long is an error
  std::int64_t drop_tile = -1;  // test seam: this tile's contribution is never pushed
};

// One step of a comm block.
struct FusedItem {
  enum Kind : std::int32_t { push = 0, gather = 1 };
  std::int32_t kind = push;
  std::int32_t wave = 0;
  std::int32_t tile = 0;  // push: the global tile; gather: the owned tile's local index
  std::int32_t sub = 0;   // subtile
};

// Byte offsets in one rank's window (device memory shared with its peers).
struct FusedWindow {
  std::size_t arrival = 0;  // owned_rows_max * tiles_n * subtiles uint32 counters
  std::size_t done = 0;     // one uint32 counter
  std::size_t stage = 0;    // nranks slots of owned_rows_max * base_m * Np floats
  std::size_t output = 0;   // Mp * Np floats, row-major
  std::size_t bytes = 0;
};

struct FusedPlan {
  Tiling t;
  int rank = 0;
  int comm_blocks = 1;
  int wave_rows = 1;  // tile rows per wave
  int waves = 1;
  FusedWindow window;
  // The items of every block, concatenated: block b runs
  // items[offsets[b] .. offsets[b + 1]).
  std::vector<FusedItem> items;
  std::vector<std::int32_t> offsets;

  int wave_of(std::int64_t tile) const { return static_cast<int>(tile / t.tiles_n / wave_rows); }
  // First tile row and number of tile rows of wave w.
  std::int64_t wave_first_row(int w) const { return static_cast<std::int64_t>(w) * wave_rows; }
  std::int64_t wave_row_count(int w) const;
  // Owners go by tile row, round-robin over the ranks, so what a source
  // sends one owner from a tile row is contiguous (one copy per row on the
  // ce engine). An owner numbers its tiles row by row: local index.
  int owner(std::int64_t tile) const { return static_cast<int>(tile / t.tiles_n % t.nranks); }
  std::int64_t local_tile(std::int64_t tile) const {
    return tile / t.tiles_n / t.nranks * t.tiles_n + tile % t.tiles_n;
  }
  std::int64_t global_tile(std::int64_t local, int owner_rank) const {
    return (local / t.tiles_n * t.nranks + owner_rank) * t.tiles_n + local % t.tiles_n;
  }
  std::int64_t owned_rows(int r) const {
    return t.tiles_m > r ? (t.tiles_m - r + t.nranks - 1) / t.nranks : 0;
  }
  std::int64_t owned_rows_max() const { return owned_rows(0); }
  // Element offset of (tile, subtile) in a row-major Mp x Np matrix, and in
  // an owner's stage: one (owned rows x base_m) x Np slot per source rank.
  std::int64_t matrix_offset(std::int64_t tile, std::int64_t sub) const;
  std::int64_t stage_offset(int src, std::int64_t local_tile, std::int64_t sub) const;
};

// Tile rows per wave that give at least `compute_sms` tiles (one per SM),
// at most all rows: the GEMM of a wave then fills the GPU.
int default_wave_rows(const Tiling& t, int compute_sms);

// The plan of rank `rank`. With `pushes` false (the ce engine: copy engines
// push), the blocks get only gather items. Throws UsageError for shapes that
// do not tile or comm_blocks < 1.
FusedPlan make_fused_plan(const FusedConfig& cfg, int rank, int compute_sms, bool pushes);

// Counter targets of epoch e.
inline std::uint32_t arrival_target(std::uint32_t epoch, int nranks) {
  return epoch * static_cast<std::uint32_t>(nranks);
}
inline std::uint32_t done_target(std::uint32_t epoch, const Tiling& t) {
  return epoch * static_cast<std::uint32_t>(t.tiles * t.subtiles);
}

// The error word a device writes when a wait misses its deadline, and its text.
struct FusedStuck {
  enum What : std::int32_t { none = 0, wave = 1, arrival = 2, done = 3 };
  std::int32_t what = none;
  std::int32_t tile = -1;  // wave: the wave; arrival: the global tile; done: -1
  std::int32_t sub = -1;
  std::uint32_t seen = 0, want = 0;
};
std::string describe(const FusedStuck& s, double watchdog_s);

// Default atol of the check: fp32 inputs and fp16/bf16 inputs with fp32
// accumulation differ from the float64 reference by summation order only.
double fused_default_atol(DType t, std::int64_t K);

// The device times of one phase on this rank, in us (-1 where the phase has none).
struct FusedTimes {
  double total_us = -1;    // start to the last of compute and comm
  double compute_us = -1;  // start to the end of the last GEMM wave
  double comm_us = -1;     // start to this rank's output complete
};

enum class FusedPhase {
  compute,      // the GEMM waves alone
  comm,         // reduce-scatter + all-gather alone, every wave marked ready at the start
  sequential,   // the waves, then all of the communication
  pipelined,    // communication of finished waves overlapped with the next waves
  interference  // the GEMM (no signals) and a prefilled communication at once
};

// One rank's fused operator on its device (made by Backend::fused_gemm_allreduce).
class FusedGemmAllReduce {
 public:
  virtual ~FusedGemmAllReduce() = default;
  // Uploads A_i (Mp x K) and B (K x Np), row-major fp32, converted to the dtype.
  virtual void set_inputs(const std::vector<float>& A, const std::vector<float>& B) = 0;
  // Collective over the runtime it was made with: runs the phase once, all
  // ranks released together, and returns this rank's device times. Throws
  // RuntimeError naming the tile when a counter stays stuck (the watchdog).
  virtual FusedTimes run(FusedPhase p) = 0;
  // This rank's Mp x Np output as left by the last communicating phase.
  virtual std::vector<float> output() = 0;
  virtual const FusedPlan& plan() const = 0;
  // "GPU0 (NVIDIA H200), shared by 2 ranks: they time-share it"
  virtual std::string placement() const = 0;
  // Collective, on the normal path before destruction: releases what other
  // ranks map (every rank closes its imports of the others' windows, then a
  // barrier, then each frees its own: freeing an exported region before its
  // importers closed it is undefined). The destructor alone, on an error's
  // way out, frees without waiting.
  virtual void close() {}
  // Collective, outside timing: fills this rank's stage and output, and its
  // product too with `product`, with 0xFF bytes (NaN), so the next phase
  // must write every element it is checked on: a push that read the product
  // before its GEMM, a gather that read the stage early or a broadcast that
  // landed late leaves NaN, not the previous phase's identical values.
  virtual void poison(bool /*product*/) {}
};

}  // namespace xb
