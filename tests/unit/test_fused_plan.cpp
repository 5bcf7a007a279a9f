// The fused GEMM + AllReduce's plan and counter protocol (coll/fused.hpp),
// with no device: the plan's coverage and order, its offsets, and the
// protocol run by host threads standing in for ranks, comm blocks and the
// copy engines, with the targets the device kernels use.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "coll/fused.hpp"
#include "core/error.hpp"

namespace xb {
namespace {

FusedConfig config(int nranks, int blocks) {
  FusedConfig c;
  c.shape.M = 200;  // padded to 256: 4 tile rows of 64
  c.shape.K = 256;
  c.shape.N = 136;  // padded to 192: 3 tile columns
  c.shape.base_m = 64;
  c.shape.base_n = 64;
  c.shape.comm_sub_m = 16;
  c.nranks = nranks;
  c.comm_blocks = blocks;
  c.wave_rows = 1;
  return c;
}

TEST(FusedPlan, EveryTileIsPushedAndEveryOwnedSubtileGatheredOnceInWaveOrder) {
  for (int n : {1, 2, 3, 5})
    for (int blocks : {1, 2, 7})
      for (int r = 0; r < n; ++r) {
        const FusedPlan p = make_fused_plan(config(n, blocks), r, 100, true);
        const Tiling& t = p.t;
        ASSERT_EQ(p.offsets.size(), static_cast<std::size_t>(blocks) + 1);
        std::multiset<std::pair<int, int>> pushes, gathers;
        for (int b = 0; b < blocks; ++b) {
          int last_wave = 0;
          bool gathered_in_wave = false;
          for (int k = p.offsets[b]; k < p.offsets[b + 1]; ++k) {
            const FusedItem& it = p.items[static_cast<std::size_t>(k)];
            ASSERT_GE(it.wave, last_wave) << "block " << b << " goes back a wave";
            if (it.wave > last_wave) gathered_in_wave = false;
            last_wave = it.wave;
            if (it.kind == FusedItem::push) {
              EXPECT_FALSE(gathered_in_wave) << "a push after a gather of the same wave";
              EXPECT_EQ(p.wave_of(it.tile), it.wave);
              pushes.insert({it.tile, it.sub});
            } else {
              gathered_in_wave = true;
              const std::int64_t g = p.global_tile(it.tile, r);
              EXPECT_EQ(p.owner(g), r);
              EXPECT_EQ(p.wave_of(g), it.wave);
              gathers.insert({static_cast<int>(g), it.sub});
            }
          }
        }
        EXPECT_EQ(pushes.size(), static_cast<std::size_t>(t.tiles * t.subtiles));
        using Set = std::set<std::pair<int, int>>;
        EXPECT_EQ(Set(pushes.begin(), pushes.end()).size(), pushes.size());
        EXPECT_EQ(gathers.size(),
                  static_cast<std::size_t>(p.owned_rows(r) * t.tiles_n * t.subtiles));
        EXPECT_EQ(Set(gathers.begin(), gathers.end()).size(), gathers.size());
      }
}

TEST(FusedPlan, CopyEnginePlansHoldGathersOnly) {
  const FusedPlan p = make_fused_plan(config(2, 3), 1, 100, false);
  ASSERT_FALSE(p.items.empty());
  for (const FusedItem& it : p.items) EXPECT_EQ(it.kind, FusedItem::gather);
}

TEST(FusedPlan, OwnersByTileRowAndOffsets) {
  const FusedPlan p = make_fused_plan(config(3, 1), 0, 100, true);
  const Tiling& t = p.t;
  EXPECT_EQ(t.Mp, 256);
  EXPECT_EQ(t.Np, 192);
  EXPECT_EQ(p.owned_rows(0), 2);  // rows 0 and 3
  EXPECT_EQ(p.owned_rows(1), 1);
  EXPECT_EQ(p.owned_rows(2), 1);
  std::set<std::int64_t> stage_offsets;
  for (std::int64_t tile = 0; tile < t.tiles; ++tile) {
    const int o = p.owner(tile);
    EXPECT_EQ(o, tile / t.tiles_n % 3);
    EXPECT_EQ(p.global_tile(p.local_tile(tile), o), tile);
    EXPECT_LT(p.local_tile(tile), p.owned_rows(o) * t.tiles_n);
    for (std::int64_t s = 0; s < t.subtiles; ++s) {
      const std::int64_t row = tile / t.tiles_n * 64 + s * 16, col = tile % t.tiles_n * 64;
      EXPECT_EQ(p.matrix_offset(tile, s), row * t.Np + col);
      for (int src = 0; src < 3; ++src) {
        const std::int64_t off = p.stage_offset(src, p.local_tile(tile), s);
        // Every (owner's slot, src, subtile) starts its rows at a distinct place.
        EXPECT_TRUE(stage_offsets.insert(o * 1000000 + off).second);
        EXPECT_LE(off + 15 * t.Np + 64,
                  static_cast<std::int64_t>(3 * p.owned_rows_max() * 64 * t.Np));
      }
    }
  }
  // The window: counters, stage and output in order, aligned, without overlap.
  const FusedWindow& w = p.window;
  EXPECT_GE(w.done, static_cast<std::size_t>(p.owned_rows_max() * t.tiles_n * t.subtiles) * 4);
  EXPECT_GE(w.stage, w.done + 4);
  EXPECT_GE(w.output, w.stage + static_cast<std::size_t>(3 * p.owned_rows_max() * 64 * t.Np) * 4);
  EXPECT_GE(w.bytes, w.output + static_cast<std::size_t>(t.Mp * t.Np) * 4);
  for (std::size_t off : {w.done, w.stage, w.output}) EXPECT_EQ(off % 256, 0u);
}

TEST(FusedPlan, WavesFillTheComputeSms) {
  FusedConfig c = config(2, 4);
  c.wave_rows = 0;
  c.shape.M = 64 * 40;
  EXPECT_EQ(make_fused_plan(c, 0, 7, true).wave_rows, 3);     // 3 columns: 3 rows = 9 tiles >= 7
  EXPECT_EQ(make_fused_plan(c, 0, 132, true).wave_rows, 40);  // capped at every row
  const FusedPlan p = make_fused_plan(c, 0, 7, true);
  EXPECT_EQ(p.waves, 14);  // 40 rows by 3
  EXPECT_EQ(p.wave_row_count(13), 1);
  c.wave_rows = 100;
  EXPECT_EQ(make_fused_plan(c, 0, 7, true).waves, 1);
}

TEST(FusedPlan, BadInput) {
  FusedConfig c = config(2, 0);
  EXPECT_THROW(make_fused_plan(c, 0, 100, true), UsageError);
  c = config(2, 1);
  c.shape.K = 100;
  EXPECT_THROW(make_fused_plan(c, 0, 100, true), UsageError);
  c = config(2, 1);
  EXPECT_THROW(make_fused_plan(c, 2, 100, true), UsageError);
}

TEST(FusedPlan, StuckWordsNameWhatWasMissing) {
  FusedStuck s;
  s.what = FusedStuck::arrival;
  s.tile = 5;
  s.sub = 2;
  s.seen = 3;
  s.want = 4;
  EXPECT_EQ(describe(s, 1.5),
            "watchdog: tile 5 subtile 2 got 3 of 4 contributions within 1.5 s: a tile was never "
            "pushed");
  s.what = FusedStuck::done;
  EXPECT_NE(describe(s, 2).find("the output got 3 of 4 subtiles"), std::string::npos);
  EXPECT_EQ(arrival_target(3, 4), 12u);
  EXPECT_GT(fused_default_atol(DType::half, 1024), fused_default_atol(DType::float32, 1024));
}

// ---- the protocol on host threads ------------------------------------------

// Every rank's memory: its product C (rank r's element i is r + 1 + i % 7),
// its window (arrival counters, done, stage, output) and its wave flags.
struct SimRank {
  std::vector<float> C, stage, out;
  std::vector<std::atomic<std::uint32_t>> arrival;
  std::atomic<std::uint32_t> done{0};
  std::vector<std::atomic<std::uint32_t>> wave_ready;
  std::atomic<int> stuck{0};
  FusedStuck word;
  std::mutex m;
};

class Sim {
 public:
  Sim(int n, int blocks, CommEngine engine, std::int64_t drop)
      : n_(n), engine_(engine), drop_(drop) {
    FusedConfig c = config(n, blocks);
    for (int r = 0; r < n; ++r)
      plans_.push_back(make_fused_plan(c, r, 100, engine == CommEngine::sm));
    const Tiling& t = plans_[0].t;
    for (int r = 0; r < n; ++r) {
      auto& k = ranks_.emplace_back(std::make_unique<SimRank>());
      k->C.resize(static_cast<std::size_t>(t.Mp * t.Np));
      for (std::size_t i = 0; i < k->C.size(); ++i) k->C[i] = static_cast<float>(r + 1 + i % 7);
      k->stage.assign(
          static_cast<std::size_t>(n * plans_[0].owned_rows_max() * t.shape.base_m * t.Np), 0);
      k->out.assign(k->C.size(), -1);
      k->arrival = std::vector<std::atomic<std::uint32_t>>(
          static_cast<std::size_t>(plans_[0].owned_rows_max() * t.tiles_n * t.subtiles));
      k->wave_ready =
          std::vector<std::atomic<std::uint32_t>>(static_cast<std::size_t>(plans_[0].waves));
    }
  }

  // One epoch: per rank a compute thread marks the waves ready one by one,
  // a copy-engine thread (ce) pushes finished rows, and the comm blocks run
  // their items. Returns the error words' texts.
  std::vector<std::string> run(std::uint32_t epoch, double timeout_s) {
    std::vector<std::thread> th;
    for (int r = 0; r < n_; ++r) {
      th.emplace_back([=, this] {
        for (auto& w : ranks_[static_cast<std::size_t>(r)]->wave_ready) {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          w.store(epoch, std::memory_order_release);
        }
      });
      if (engine_ == CommEngine::ce)
        th.emplace_back([=, this] { copy_engine(r, epoch, timeout_s); });
      for (int b = 0; b < plans_[0].comm_blocks; ++b)
        th.emplace_back([=, this] { block(r, b, epoch, timeout_s); });
    }
    for (auto& x : th) x.join();
    std::vector<std::string> errs;
    for (auto& k : ranks_)
      if (k->stuck) errs.push_back(describe(k->word, timeout_s));
    return errs;
  }

  // Counters as epoch `e` left them (as if e epochs had run).
  void start_at(std::uint32_t e) {
    const Tiling& t = plans_[0].t;
    for (auto& k : ranks_) {
      for (auto& a : k->arrival) a = arrival_target(e, n_);
      k->done = done_target(e, t);
    }
  }

  // Every rank's output holds the sum over ranks of their products.
  void expect_sums() const {
    const Tiling& t = plans_[0].t;
    for (int r = 0; r < n_; ++r)
      for (std::size_t i = 0; i < ranks_[0]->C.size(); ++i) {
        float want = 0;
        for (int q = 0; q < n_; ++q) want += ranks_[static_cast<std::size_t>(q)]->C[i];
        ASSERT_EQ(ranks_[static_cast<std::size_t>(r)]->out[i], want)
            << "rank " << r << " element " << i << " of " << t.Mp * t.Np;
      }
  }

 private:
  bool wait(int r, const std::atomic<std::uint32_t>& c, std::uint32_t want, FusedStuck::What what,
            int tile, int sub, double timeout_s) {
    SimRank& k = *ranks_[static_cast<std::size_t>(r)];
    const auto t0 = std::chrono::steady_clock::now();
    std::uint32_t v;
    while (static_cast<std::int32_t>((v = c.load(std::memory_order_acquire)) - want) < 0) {
      if (k.stuck) return false;
      if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(timeout_s)) {
        std::lock_guard lock(k.m);
        if (!k.stuck) {
          k.word = {what, tile, sub, v, want};
          k.stuck = 1;
        }
        return false;
      }
      std::this_thread::yield();
    }
    return true;
  }

  void block(int r, int b, std::uint32_t e, double timeout_s) {
    const FusedPlan& p = plans_[static_cast<std::size_t>(r)];
    const Tiling& t = p.t;
    SimRank& me = *ranks_[static_cast<std::size_t>(r)];
    const std::int64_t rows = t.shape.comm_sub_m, cols = t.shape.base_n;
    for (int k = p.offsets[b]; k < p.offsets[b + 1]; ++k) {
      const FusedItem it = p.items[static_cast<std::size_t>(k)];
      if (it.kind == FusedItem::push) {
        if (it.tile == drop_) continue;
        if (!wait(r, me.wave_ready[static_cast<std::size_t>(it.wave)], e, FusedStuck::wave, it.wave,
                  -1, timeout_s))
          return;
        const int o = p.owner(it.tile);
        SimRank& owner = *ranks_[static_cast<std::size_t>(o)];
        const std::int64_t src = p.matrix_offset(it.tile, it.sub),
                           dst = p.stage_offset(r, p.local_tile(it.tile), it.sub);
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 0; j < cols; ++j)
            owner.stage[static_cast<std::size_t>(dst + i * t.Np + j)] =
                me.C[static_cast<std::size_t>(src + i * t.Np + j)];
        owner.arrival[static_cast<std::size_t>(p.local_tile(it.tile) * t.subtiles + it.sub)]
            .fetch_add(1, std::memory_order_release);
      } else {
        const std::int64_t g = p.global_tile(it.tile, r);
        if (!wait(r, me.arrival[static_cast<std::size_t>(it.tile * t.subtiles + it.sub)],
                  arrival_target(e, n_), FusedStuck::arrival, static_cast<int>(g), it.sub,
                  timeout_s))
          return;
        const std::int64_t out = p.matrix_offset(g, it.sub);
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 0; j < cols; ++j) {
            float s = 0;
            for (int src = 0; src < n_; ++src)
              s += me.stage[static_cast<std::size_t>(p.stage_offset(src, it.tile, it.sub) +
                                                     i * t.Np + j)];
            for (auto& q : ranks_) q->out[static_cast<std::size_t>(out + i * t.Np + j)] = s;
          }
        for (auto& q : ranks_) q->done.fetch_add(1, std::memory_order_release);
      }
    }
    if (b == 0) wait(r, me.done, done_target(e, t), FusedStuck::done, -1, -1, timeout_s);
  }

  // The ce engine: whole tile rows to their owners after each wave, then
  // +1 on every subtile of the row but the dropped tile's.
  void copy_engine(int r, std::uint32_t e, double timeout_s) {
    const FusedPlan& p = plans_[static_cast<std::size_t>(r)];
    const Tiling& t = p.t;
    SimRank& me = *ranks_[static_cast<std::size_t>(r)];
    const std::int64_t row_elems = t.shape.base_m * t.Np;
    for (int w = 0; w < p.waves; ++w) {
      if (!wait(r, me.wave_ready[static_cast<std::size_t>(w)], e, FusedStuck::wave, w, -1,
                timeout_s))
        return;
      for (std::int64_t row = p.wave_first_row(w); row < p.wave_first_row(w) + p.wave_row_count(w);
           ++row) {
        SimRank& owner = *ranks_[static_cast<std::size_t>(row % n_)];
        const std::int64_t local_first = p.local_tile(row * t.tiles_n);
        std::copy_n(me.C.begin() + row * row_elems, row_elems,
                    owner.stage.begin() + p.stage_offset(r, local_first, 0));
        for (std::int64_t col = 0; col < t.tiles_n; ++col) {
          if (row * t.tiles_n + col == drop_) continue;
          for (std::int64_t s = 0; s < t.subtiles; ++s)
            owner.arrival[static_cast<std::size_t>((local_first + col) * t.subtiles + s)].fetch_add(
                1, std::memory_order_release);
        }
      }
    }
  }

  int n_;
  CommEngine engine_;
  std::int64_t drop_;
  std::vector<FusedPlan> plans_;
  std::vector<std::unique_ptr<SimRank>> ranks_;
};

TEST(FusedProtocol, RanksBlocksAndEpochsReduceToTheSumOnEveryRank) {
  for (CommEngine e : {CommEngine::sm, CommEngine::ce})
    for (int n : {2, 3}) {
      Sim sim(n, 3, e, -1);
      for (std::uint32_t epoch = 1; epoch <= 2; ++epoch) {  // counters are never reset
        const auto errs = sim.run(epoch, 20);
        EXPECT_TRUE(errs.empty()) << errs.front();
        sim.expect_sums();
      }
    }
}

TEST(FusedProtocol, CountersWrapAroundSafely) {
  // The targets of epoch e are e times a count, modulo 2^32: an epoch whose
  // targets wrap past 2^32 still completes, and only then.
  Sim sim(2, 2, CommEngine::sm, -1);
  const std::uint32_t per_epoch = done_target(1, make_fused_plan(config(2, 2), 0, 100, true).t);
  const std::uint32_t first = 0xFFFFFFFFu / per_epoch;  // its done target is just below 2^32
  sim.start_at(first - 1);
  for (std::uint32_t e = first; e <= first + 1; ++e) {
    const auto errs = sim.run(e, 20);
    EXPECT_TRUE(errs.empty()) << errs.front();
    sim.expect_sums();
  }
}

TEST(FusedProtocol, ADroppedTileStopsEveryRankWithinTheWatchdogNamingIt) {
  for (CommEngine e : {CommEngine::sm, CommEngine::ce}) {
    Sim sim(2, 2, e, 4);  // tile 4: row 1, owned by rank 1; no rank pushes it
    const auto t0 = std::chrono::steady_clock::now();
    const auto errs = sim.run(1, 0.3);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    ASSERT_EQ(errs.size(), 2u) << "every rank stops";
    bool named = false;
    for (const auto& m : errs)
      named = named || (m.find("tile 4 subtile ") != std::string::npos &&
                        m.find("got 0 of 2 contributions") != std::string::npos);
    EXPECT_TRUE(named) << errs[0] << " | " << errs[1];
  }
}

}  // namespace
}  // namespace xb
