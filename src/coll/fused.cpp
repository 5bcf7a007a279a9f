#include "coll/fused.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace xb {

const char* to_string(CommEngine e) { return e == CommEngine::sm ? "sm" : "ce"; }

std::int64_t FusedPlan::wave_row_count(int w) const {
  return std::min<std::int64_t>(wave_rows, t.tiles_m - wave_first_row(w));
}

std::int64_t FusedPlan::matrix_offset(std::int64_t tile, std::int64_t sub) const {
  const std::int64_t row = (tile / t.tiles_n) * t.shape.base_m + sub * t.shape.comm_sub_m;
  const std::int64_t col = (tile % t.tiles_n) * t.shape.base_n;
  return row * t.Np + col;
}

std::int64_t FusedPlan::stage_offset(int src, std::int64_t local_tile, std::int64_t sub) const {
  const std::int64_t slot = owned_rows_max() * t.shape.base_m * t.Np;
  const std::int64_t row = local_tile / t.tiles_n * t.shape.base_m + sub * t.shape.comm_sub_m;
  return src * slot + row * t.Np + local_tile % t.tiles_n * t.shape.base_n;
}

int default_wave_rows(const Tiling& t, int compute_sms) {
  const std::int64_t rows = (std::max(1, compute_sms) + t.tiles_n - 1) / t.tiles_n;
  return static_cast<int>(std::clamp<std::int64_t>(rows, 1, t.tiles_m));
}

FusedPlan make_fused_plan(const FusedConfig& cfg, int rank, int compute_sms, bool pushes) {
  if (cfg.comm_blocks < 1) throw UsageError("--comm-blocks must be at least 1");
  if (cfg.nranks < 1 || rank < 0 || rank >= cfg.nranks)
    throw UsageError(fmt::format("rank {} of {} ranks", rank, cfg.nranks));
  FusedPlan p;
  p.t = make_tiling(cfg.shape, cfg.nranks, 1, 1);
  const Tiling& t = p.t;
  if (t.tiles * t.subtiles > (std::int64_t{1} << 30))
    throw UsageError(fmt::format("{} subtiles: too many for the fused plan; use larger tiles",
                                 t.tiles * t.subtiles));
  p.rank = rank;
  p.comm_blocks = cfg.comm_blocks;
  p.wave_rows = cfg.wave_rows > 0
                    ? static_cast<int>(std::min<std::int64_t>(cfg.wave_rows, t.tiles_m))
                    : default_wave_rows(t, compute_sms);
  p.waves = static_cast<int>((t.tiles_m + p.wave_rows - 1) / p.wave_rows);

  // Window: counters first (one 128-byte line for done), then stage and output.
  const auto owned = static_cast<std::size_t>(p.owned_rows_max() * t.tiles_n);
  const auto align = [](std::size_t x) { return (x + 255) / 256 * 256; };
  p.window.arrival = 0;
  p.window.done = align(owned * static_cast<std::size_t>(t.subtiles) * sizeof(std::uint32_t));
  p.window.stage = align(p.window.done + sizeof(std::uint32_t));
  p.window.output =
      align(p.window.stage + static_cast<std::size_t>(t.nranks) * owned *
                                 static_cast<std::size_t>(t.tile_elems) * sizeof(float));
  p.window.bytes = align(p.window.output + static_cast<std::size_t>(t.Mp * t.Np) * sizeof(float));

  // Items in wave order; within a wave its pushes, then its gathers, dealt
  // round-robin to the blocks so that each block keeps the wave order.
  std::vector<std::vector<FusedItem>> per_block(static_cast<std::size_t>(cfg.comm_blocks));
  std::size_t next = 0;
  const auto deal = [&](FusedItem it) {
    per_block[next].push_back(it);
    next = (next + 1) % per_block.size();
  };
  for (int w = 0; w < p.waves; ++w) {
    const std::int64_t first = p.wave_first_row(w) * t.tiles_n;
    const std::int64_t last = first + p.wave_row_count(w) * t.tiles_n;
    if (pushes)
      for (std::int64_t tile = first; tile < last; ++tile)
        for (std::int64_t s = 0; s < t.subtiles; ++s)
          deal({FusedItem::push, w, static_cast<std::int32_t>(tile), static_cast<std::int32_t>(s)});
    for (std::int64_t tile = first; tile < last; ++tile)
      if (p.owner(tile) == rank)
        for (std::int64_t s = 0; s < t.subtiles; ++s)
          deal({FusedItem::gather, w, static_cast<std::int32_t>(p.local_tile(tile)),
                static_cast<std::int32_t>(s)});
  }
  p.offsets.push_back(0);
  for (const auto& b : per_block) {
    p.items.insert(p.items.end(), b.begin(), b.end());
    p.offsets.push_back(static_cast<std::int32_t>(p.items.size()));
  }
  return p;
}

std::string describe(const FusedStuck& s, double watchdog_s) {
  switch (s.what) {
    case FusedStuck::wave:
      return fmt::format(
          "watchdog: wave {} was never marked computed within {} s (ready flag {}, want {})",
          s.tile, watchdog_s, s.seen, s.want);
    case FusedStuck::arrival:
      return fmt::format(
          "watchdog: tile {} subtile {} got {} of {} contributions within {} s: a tile was never "
          "pushed",
          s.tile, s.sub, s.seen, s.want, watchdog_s);
    case FusedStuck::done:
      return fmt::format(
          "watchdog: the output got {} of {} subtiles within {} s: an owner never all-gathered",
          s.seen, s.want, watchdog_s);
    default:
      return "no stuck counter";
  }
}

double fused_default_atol(DType t, std::int64_t K) {
  const double k = static_cast<double>(K);
  return t == DType::float32 ? 1e-4 * k : 1e-3 * k;
}

}  // namespace xb
