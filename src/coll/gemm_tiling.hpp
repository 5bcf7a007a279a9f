#pragma once
// The tiling of fused GEMM + AllReduce (pto-isa's GEMM+AllReduce example): padded shape,
// output tiles in zigzag order, owner rank per tile, subtiles of commSubM rows, and
// the layout of each rank's symmetric window. Pure: no threads, no MPI.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace xb {

struct GemmShape {
  std::int64_t M = 1024, K = 1024, N = 1024;
  std::int64_t base_m = 128, base_n = 128, base_k = 64, step_k = 4;
  std::int64_t comm_sub_m = 32;
};

struct Tiling {
  GemmShape shape;
  int nranks = 1;
  std::int64_t Mp = 0, Np = 0;  // padded to base_m / base_n
  std::int64_t tiles_m = 0, tiles_n = 0, tiles = 0;
  std::int64_t subtiles = 0;    // per tile: base_m / comm_sub_m
  std::int64_t tile_elems = 0;  // base_m * base_n

  int owner(std::int64_t tile) const { return static_cast<int>(tile % nranks); }
  std::int64_t local_index(std::int64_t tile) const { return tile / nranks; }
  std::int64_t owned_tiles(int rank) const;  // tiles whose owner is rank
  std::int64_t max_owned() const { return owned_tiles(0); }
  // Zigzag (boustrophedon) order: odd tile rows run right to left, so
  // neighbouring tiles share B columns (the block swizzle of pto-isa's GEMM+AllReduce example).
  std::int64_t zigzag(std::int64_t i) const;
  // Tiles of compute worker w out of W, in the order it computes them.
  std::vector<std::int64_t> worker_tiles(int w, int workers) const;
  // All-gather worker of an owned subtile (tile_local, s) among W comm workers.
  int ag_worker(std::int64_t tile_local, std::int64_t s, int workers) const;
  // Tile waves: how many rounds of tiles the compute workers need.
  std::int64_t waves(int compute_workers) const;
};

// Throws UsageError: zero sizes, K not a multiple of base_k*step_k, base_m
// not a multiple of comm_sub_m, more workers than tiles.
Tiling make_tiling(const GemmShape& s, int nranks, int compute_workers, int comm_workers);

// Byte layout of one rank's window: cache-line counters, then the reduce
// stage (a slot per source rank and owned tile), then the full output.
struct WindowLayout {
  std::size_t sub_ready = 0;  // offset of owned_tiles*subtiles counters (64 B each)
  std::size_t doorbells = 0;  // one per comm worker (64 B each)
  std::size_t out_ready = 0;  // one counter (64 B)
  std::size_t stage = 0;      // nranks * max_owned * tile_elems floats
  std::size_t output = 0;     // Mp * Np floats
  std::size_t bytes = 0;      // the whole window
};
WindowLayout window_layout(const Tiling& t, int comm_workers);

}  // namespace xb
