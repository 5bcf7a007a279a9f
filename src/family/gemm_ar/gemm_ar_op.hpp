#pragma once
// The fused GEMM + AllReduce operator of gemm-ar on one rank (after pto-isa's GEMM+AllReduce
// example; host backend), and the thread crew its workers run on.
//
// Protocol of one iteration (after reset() on every rank):
//  - compute worker w computes its tiles (Tiling::worker_tiles, zigzag
//    order) with sgemm into C; when signalling, it pushes each tile to its
//    own SPSC ready queue and rings the doorbell of comm worker
//    w % comm_workers;
//  - comm worker b drains queues b, b + comm_workers, ... and reduce-scatters
//    each tile, subtile by subtile, into the owner rank's window stage (one
//    slot per source rank), bumping that subtile's ready counter;
//  - the all-gather worker of an owned subtile (Tiling::ag_worker) waits for
//    all nranks contributions, reduces them in rank order (deterministic),
//    writes the sum into every rank's output and bumps its out_ready;
//  - wait_output() returns once this rank's output holds every subtile.
// Every wait has a watchdog (cfg.watchdog_s without progress) that throws
// RuntimeError naming the rank, the worker and what it waited for, so a lost
// signal (cfg.drop_tile) fails the run instead of hanging it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "coll/gemm_tiling.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "family/gemm_ar/gemm_ar_bench.hpp"
#include "family/gemm_ar/sync.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// A group of threads that keeps the first exception any of them throws;
// join() waits for all of them and rethrows it. The destructor joins too:
// on an error path the remaining workers run into their watchdogs, and no
// thread outlives the crew (they use the operator that owns their state).
class Crew {
 public:
  Crew() = default;
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;
  ~Crew();

  template <class F>
  void spawn(F f) {
    threads_.emplace_back([this, f] {
      try {
        f();
      } catch (...) {
        std::lock_guard lock(m_);
        if (!error_) error_ = std::current_exception();
      }
    });
  }

  // Joins every thread spawned so far; the crew can then spawn again.
  void join();

 private:
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::exception_ptr error_;
};

class GemmArOperator {
 public:
  // Builds this rank's inputs and one ready queue per compute worker. `win`
  // is the shm window laid out by window_layout(t, cfg.comm_workers) on
  // every rank; `rt`, `cfg`, `win` and `t` must outlive the operator.
  GemmArOperator(Runtime& rt, const GemmArConfig& cfg, Window& win, const Tiling& t);

  // Collective, outside timing: this rank's counters and queues back to
  // zero, ordered before any rank's next iteration.
  void reset();
  // Spawns the compute workers on `crew`. With `signal`, every computed tile
  // but cfg.drop_tile is queued for the comm workers. `done`, when given,
  // receives the time the last compute worker finished.
  void compute(bool signal, Crew& crew, Clock::time_point* done);
  // Spawns the comm workers on `crew`; they finish once this rank's tiles
  // are reduce-scattered and its owned subtiles all-gathered.
  void communicate(Crew& crew);
  // Every tile "computed": fills the queues as signalling compute workers
  // would (no sgemm), to time the communication alone.
  void prefill();
  // Waits until every subtile of the output has arrived here.
  void wait_output();

  // This rank's Mp x Np output (row-major) in its window.
  const float* output() const;
  // This rank's computed tiles, tile after tile (tiles x tile_elems floats).
  std::vector<float>& C() { return C_; }

 private:
  struct Pending {  // an owned subtile waiting for its all-gather
    std::int64_t tl, s;
  };
  // What one comm worker serves and how far it got.
  struct CommWork {
    std::vector<int> queues;                        // compute workers' queues it drains
    std::vector<std::vector<std::int64_t>> expect;  // per queue, tiles in order
    std::vector<std::size_t> seen;                  // per queue, tiles popped
    std::size_t rs_total = 0, rs_done = 0;          // reduce-scatters
    std::vector<Pending> ag;                        // owned subtiles not yet all-gathered
  };

  Clock::duration watchdog() const;
  void bind(int worker) const;
  std::atomic<std::uint32_t>& counter(int r, std::size_t region, std::int64_t i);
  void ring(int r, int worker);
  float* stage(int r, int src, std::int64_t tl);
  void compute_tile(std::int64_t tile);
  void reduce_scatter(std::int64_t tile);
  void all_gather(std::int64_t tl, std::int64_t s, std::vector<float>& sum);
  CommWork comm_work(int b) const;
  bool drain_queues(CommWork& w);
  bool gather_ready(CommWork& w, std::vector<float>& sum);
  void comm_worker(int b);
  RuntimeError stuck(int b, const CommWork& w);

  Runtime& rt_;
  const GemmArConfig& cfg_;
  Window& win_;
  const Tiling& t_;
  WindowLayout lay_;
  int rank_, n_;
  std::vector<std::byte*> base_;
  std::vector<float> A_, B_, C_;
  std::vector<std::unique_ptr<SpscQueue>> queues_;
};

}  // namespace xb
