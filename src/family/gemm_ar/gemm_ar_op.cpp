#include "family/gemm_ar/gemm_ar_op.hpp"

#ifdef XFERBENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "family/gemm_ar/gemm_ar_inputs.hpp"

namespace xb {

Crew::~Crew() {  // on an error path: let the workers run into their watchdogs
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void Crew::join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

GemmArOperator::GemmArOperator(Runtime& rt, const GemmArConfig& cfg, Window& win, const Tiling& t)
    : rt_(rt),
      cfg_(cfg),
      win_(win),
      t_(t),
      lay_(window_layout(t, cfg.comm_workers)),
      rank_(rt.rank()),
      n_(rt.size()) {
  for (int r = 0; r < n_; ++r) base_.push_back(win.direct(r));
  fill_gemm_ar_inputs(t_, rank_, A_, B_);
  C_.assign(static_cast<std::size_t>(t_.tiles * t_.tile_elems), 0.0f);
  for (int w = 0; w < cfg.compute_workers; ++w)
    queues_.push_back(std::make_unique<SpscQueue>(static_cast<std::size_t>(t_.tiles)));
}

void GemmArOperator::reset() {
  std::memset(base_[static_cast<std::size_t>(rank_)], 0, lay_.stage);
  for (auto& q : queues_) q->reset();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  win_.sync();
  rt_.barrier(Runtime::Wait::spin);  // the next timed phase starts from here
  win_.sync();
}

// Pins the calling worker to its CPU (cfg.cpus; none: unbound).
void GemmArOperator::bind(int worker) const {
  if (cfg_.cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cfg_.cpus[static_cast<std::size_t>(worker) % cfg_.cpus.size()], &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort
}

void GemmArOperator::compute(bool signal, Crew& crew, Clock::time_point* done) {
  auto finished = std::make_shared<std::atomic<int>>(0);
  for (int w = 0; w < cfg_.compute_workers; ++w)
    crew.spawn([this, w, signal, finished, done] {
      bind(w);
      for (std::int64_t tile : t_.worker_tiles(w, cfg_.compute_workers)) {
        compute_tile(tile);
        if (signal && tile != cfg_.drop_tile) {
          queues_[static_cast<std::size_t>(w)]->push(tile);
          ring(rank_, w % cfg_.comm_workers);
        }
      }
      if (finished->fetch_add(1) + 1 == cfg_.compute_workers && done) *done = Clock::now();
    });
}

void GemmArOperator::communicate(Crew& crew) {
  for (int b = 0; b < cfg_.comm_workers; ++b)
    crew.spawn([this, b] {
      bind(cfg_.compute_workers + b);
      comm_worker(b);
    });
}

void GemmArOperator::prefill() {
  for (int w = 0; w < cfg_.compute_workers; ++w)
    for (std::int64_t tile : t_.worker_tiles(w, cfg_.compute_workers))
      if (tile != cfg_.drop_tile) queues_[static_cast<std::size_t>(w)]->push(tile);
}

void GemmArOperator::wait_output() {
  auto& c = counter(rank_, lay_.out_ready, 0);
  const auto want = static_cast<std::uint32_t>(t_.tiles * t_.subtiles);
  const auto deadline = Clock::now() + watchdog();
  for (std::uint32_t v; (v = c.load(std::memory_order_acquire)) < want;) {
    if (Clock::now() > deadline)
      throw RuntimeError(fmt::format("watchdog: rank {} output has {} of {} subtiles after {} s",
                                     rank_, v, want, cfg_.watchdog_s));
    sleep_while(c, v, 50);
  }
}

const float* GemmArOperator::output() const {
  return reinterpret_cast<const float*>(base_[static_cast<std::size_t>(rank_)] + lay_.output);
}

Clock::duration GemmArOperator::watchdog() const {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(cfg_.watchdog_s));
}

std::atomic<std::uint32_t>& GemmArOperator::counter(int r, std::size_t region, std::int64_t i) {
  return reinterpret_cast<PaddedCounter*>(base_[static_cast<std::size_t>(r)] + region)[i].value;
}

void GemmArOperator::ring(int r, int worker) {
  auto& d = counter(r, lay_.doorbells, worker);
  d.fetch_add(1, std::memory_order_release);
  wake_all(d);
}

// Rank r's stage slot for source rank `src` and owned tile `tl`.
float* GemmArOperator::stage(int r, int src, std::int64_t tl) {
  return reinterpret_cast<float*>(base_[static_cast<std::size_t>(r)] + lay_.stage) +
         (src * t_.max_owned() + tl) * t_.tile_elems;
}

void GemmArOperator::compute_tile(std::int64_t tile) {
  const auto& s = t_.shape;
  const std::int64_t tr = tile / t_.tiles_n, tc = tile % t_.tiles_n;
#ifdef XFERBENCH_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.base_m),
              static_cast<int>(s.base_n), static_cast<int>(s.K), 1.0f,
              A_.data() + tr * s.base_m * s.K, static_cast<int>(s.K), B_.data() + tc * s.base_n,
              static_cast<int>(t_.Np), 0.0f, C_.data() + tile * t_.tile_elems,
              static_cast<int>(s.base_n));
#else
  (void)s;
  (void)tr;
  (void)tc;
  (void)tile;
  throw RuntimeError("host gemm-ar needs OpenBLAS (not in this build)");
#endif
}

// Reduce-scatter of one tile: each subtile into the owner's stage slot for
// this rank, then its ready counter and the owner's AG doorbell.
void GemmArOperator::reduce_scatter(std::int64_t tile) {
  const int o = t_.owner(tile);
  const std::int64_t tl = t_.local_index(tile), rows = t_.shape.comm_sub_m, bn = t_.shape.base_n;
  for (std::int64_t s = 0; s < t_.subtiles; ++s) {
    std::memcpy(stage(o, rank_, tl) + s * rows * bn,
                C_.data() + tile * t_.tile_elems + s * rows * bn,
                static_cast<std::size_t>(rows * bn) * sizeof(float));
    std::atomic_thread_fence(std::memory_order_release);
    auto& ready = counter(o, lay_.sub_ready, tl * t_.subtiles + s);
    ready.fetch_add(1, std::memory_order_release);
    ring(o, t_.ag_worker(tl, s, cfg_.comm_workers));
  }
}

// All-gather of an owned subtile with every contribution in: reduced in
// rank order (deterministic), then written to every rank's output.
void GemmArOperator::all_gather(std::int64_t tl, std::int64_t s, std::vector<float>& sum) {
  const std::int64_t rows = t_.shape.comm_sub_m, bn = t_.shape.base_n, tile = tl * n_ + rank_;
  std::fill(sum.begin(), sum.end(), 0.0f);
  for (int src = 0; src < n_; ++src) {
    const float* p = stage(rank_, src, tl) + s * rows * bn;
    for (std::int64_t i = 0; i < rows * bn; ++i) sum[static_cast<std::size_t>(i)] += p[i];
  }
  const std::int64_t r0 = (tile / t_.tiles_n) * t_.shape.base_m + s * rows,
                     c0 = (tile % t_.tiles_n) * bn;
  const int first =
      static_cast<int>((rank_ + 1 + tl * t_.subtiles + s) % n_);  // rotate the first peer
  for (int k = 0; k < n_; ++k) {
    const int p = (first + k) % n_;
    float* out = reinterpret_cast<float*>(base_[static_cast<std::size_t>(p)] + lay_.output);
    for (std::int64_t i = 0; i < rows; ++i)
      std::memcpy(out + (r0 + i) * t_.Np + c0, sum.data() + i * bn,
                  static_cast<std::size_t>(bn) * sizeof(float));
    std::atomic_thread_fence(std::memory_order_release);
    auto& c = counter(p, lay_.out_ready, 0);
    c.fetch_add(1, std::memory_order_release);
    wake_all(c);
  }
}

GemmArOperator::CommWork GemmArOperator::comm_work(int b) const {
  CommWork w;
  for (int q = b; q < cfg_.compute_workers; q += cfg_.comm_workers) {
    w.queues.push_back(q);
    w.expect.push_back(t_.worker_tiles(q, cfg_.compute_workers));
    w.rs_total += w.expect.back().size();
  }
  w.seen.assign(w.queues.size(), 0);
  for (std::int64_t tl = 0; tl < t_.owned_tiles(rank_); ++tl)
    for (std::int64_t s = 0; s < t_.subtiles; ++s)
      if (t_.ag_worker(tl, s, cfg_.comm_workers) == b) w.ag.push_back({tl, s});
  return w;
}

// Reduce-scatters every tile ready in w's queues; true if there was one.
bool GemmArOperator::drain_queues(CommWork& w) {
  bool progress = false;
  for (std::size_t i = 0; i < w.queues.size(); ++i)
    for (std::int64_t tile; queues_[static_cast<std::size_t>(w.queues[i])]->pop(&tile);) {
      reduce_scatter(tile);
      ++w.seen[i];
      ++w.rs_done;
      progress = true;
    }
  return progress;
}

// All-gathers every pending subtile with all contributions in; true if any.
bool GemmArOperator::gather_ready(CommWork& w, std::vector<float>& sum) {
  bool progress = false;
  for (std::size_t i = 0; i < w.ag.size();) {
    auto& ready = counter(rank_, lay_.sub_ready, w.ag[i].tl * t_.subtiles + w.ag[i].s);
    if (ready.load(std::memory_order_acquire) == static_cast<std::uint32_t>(n_)) {
      all_gather(w.ag[i].tl, w.ag[i].s, sum);
      w.ag[i] = w.ag.back();
      w.ag.pop_back();
      progress = true;
    } else {
      ++i;
    }
  }
  return progress;
}

// Polls its queues and subtiles until both are done; sleeps on its doorbell
// between rounds without progress, and throws once a watchdog period passes
// without any.
void GemmArOperator::comm_worker(int b) {
  CommWork w = comm_work(b);
  std::vector<float> sum(static_cast<std::size_t>(t_.shape.comm_sub_m * t_.shape.base_n));
  auto& bell = counter(rank_, lay_.doorbells, b);
  auto deadline = Clock::now() + watchdog();
  while (w.rs_done < w.rs_total || !w.ag.empty()) {
    const std::uint32_t rung = bell.load(std::memory_order_acquire);
    const bool scattered = drain_queues(w);
    const bool gathered = gather_ready(w, sum);
    if (scattered || gathered) {
      deadline = Clock::now() + watchdog();
      continue;
    }
    if (Clock::now() > deadline) throw stuck(b, w);
    sleep_while(bell, rung, 50);
  }
}

// The watchdog error of comm worker b: the first tile it still expects from
// a compute worker, else the first owned subtile still missing contributions.
RuntimeError GemmArOperator::stuck(int b, const CommWork& w) {
  for (std::size_t i = 0; i < w.queues.size(); ++i)
    if (w.seen[i] < w.expect[i].size())
      return RuntimeError(
          fmt::format("watchdog: rank {} comm worker {}: tile {} of compute worker {} never became "
                      "ready after {} s",
                      rank_, b, w.expect[i][w.seen[i]], w.queues[i], cfg_.watchdog_s));
  const auto& p = w.ag.front();
  return RuntimeError(fmt::format(
      "watchdog: rank {} comm worker {}: tile {} subtile {} has {} of {} contributions "
      "after {} s",
      rank_, b, p.tl * n_ + rank_, p.s,
      counter(rank_, lay_.sub_ready, p.tl * t_.subtiles + p.s).load(), n_, cfg_.watchdog_s));
}

}  // namespace xb
