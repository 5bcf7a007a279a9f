#include "coll/gemm_tiling.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace xb {

std::int64_t Tiling::owned_tiles(int rank) const {
  return tiles > rank ? (tiles - rank + nranks - 1) / nranks : 0;
}

std::int64_t Tiling::zigzag(std::int64_t i) const {
  const std::int64_t row = i / tiles_n, col = i % tiles_n;
  return row * tiles_n + (row % 2 ? tiles_n - 1 - col : col);
}

std::vector<std::int64_t> Tiling::worker_tiles(int w, int workers) const {
  std::vector<std::int64_t> out;
  for (std::int64_t i = w; i < tiles; i += workers) out.push_back(zigzag(i));
  return out;
}

int Tiling::ag_worker(std::int64_t tile_local, std::int64_t s, int workers) const {
  return static_cast<int>((tile_local * subtiles + s) % workers);
}

std::int64_t Tiling::waves(int compute_workers) const {
  return (tiles + compute_workers - 1) / compute_workers;
}

Tiling make_tiling(const GemmShape& s, int nranks, int compute_workers, int comm_workers) {
  if (s.M <= 0 || s.K <= 0 || s.N <= 0)
    throw UsageError(fmt::format("shape {}x{}x{}: sizes must be positive", s.M, s.K, s.N));
  if (s.base_m <= 0 || s.base_n <= 0 || s.base_k <= 0 || s.step_k <= 0 || s.comm_sub_m <= 0)
    throw UsageError("tile sizes must be positive");
  if (s.K % (s.base_k * s.step_k) != 0)
    throw UsageError(
        fmt::format("-K {} is not a multiple of baseK x stepK = {}", s.K, s.base_k * s.step_k));
  if (s.base_m % s.comm_sub_m != 0)
    throw UsageError(
        fmt::format("baseM {} is not a multiple of commSubM {}", s.base_m, s.comm_sub_m));
  if (compute_workers < 1 || comm_workers < 1)
    throw UsageError("--compute-workers and --comm-workers must be at least 1");
  Tiling t;
  t.shape = s;
  t.nranks = nranks;
  t.Mp = (s.M + s.base_m - 1) / s.base_m * s.base_m;
  t.Np = (s.N + s.base_n - 1) / s.base_n * s.base_n;
  t.tiles_m = t.Mp / s.base_m;
  t.tiles_n = t.Np / s.base_n;
  t.tiles = t.tiles_m * t.tiles_n;
  t.subtiles = s.base_m / s.comm_sub_m;
  t.tile_elems = s.base_m * s.base_n;
  if (compute_workers > t.tiles)
    throw UsageError(fmt::format("--compute-workers {} but the shape has only {} tiles",
                                 compute_workers, t.tiles));
  if (comm_workers > t.tiles * t.subtiles)
    throw UsageError(fmt::format("--comm-workers {} but the shape has only {} subtiles",
                                 comm_workers, t.tiles * t.subtiles));
  return t;
}

WindowLayout window_layout(const Tiling& t, int comm_workers) {
  constexpr std::size_t line = 64;
  WindowLayout w;
  w.sub_ready = 0;
  w.doorbells = w.sub_ready + static_cast<std::size_t>(t.max_owned() * t.subtiles) * line;
  w.out_ready = w.doorbells + static_cast<std::size_t>(comm_workers) * line;
  w.stage = w.out_ready + line;
  w.output =
      w.stage + static_cast<std::size_t>(t.nranks * t.max_owned() * t.tile_elems) * sizeof(float);
  w.bytes = w.output + static_cast<std::size_t>(t.Mp * t.Np) * sizeof(float);
  return w;
}

}  // namespace xb
