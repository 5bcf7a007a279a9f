#include "family/gemm_ar/gemm_ar_bench.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "coll/communicator.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "family/gemm_ar/sync.hpp"

extern "C" void openblas_set_num_threads(int);

namespace xb {
namespace {

constexpr std::uint64_t kBSeed = 0xB0000;

// Inputs are multiples of 1/16 in [-0.5, 0.5]: exact in bf16 and fp32.
float input(std::uint64_t seed, std::int64_t i, std::int64_t j) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL ^
                    static_cast<std::uint64_t>(i) * 0xBF58476D1CE4E5B9ULL ^
                    static_cast<std::uint64_t>(j) * 0x94D049BB133111EBULL;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 32;
  return static_cast<float>(static_cast<int>(x % 17) - 8) / 16.0f;
}

// Collects the first exception of a group of threads; join() rethrows it.
class Crew {
 public:
  Crew() = default;
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;
  ~Crew() {  // on an error path: let the workers run into their watchdogs
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
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
  void join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::exception_ptr error_;
};

class Operator {
 public:
  Operator(Runtime& rt, const GemmArConfig& cfg, Window& win, const Tiling& t)
      : rt_(rt),
        cfg_(cfg),
        win_(win),
        t_(t),
        lay_(window_layout(t, cfg.comm_workers)),
        rank_(rt.rank()),
        n_(rt.size()) {
    for (int r = 0; r < n_; ++r) base_.push_back(win.direct(r));
    const auto& s = t_.shape;
    A_.assign(static_cast<std::size_t>(t_.Mp * s.K), 0.0f);
    B_.assign(static_cast<std::size_t>(s.K * t_.Np), 0.0f);
    C_.assign(static_cast<std::size_t>(t_.tiles * t_.tile_elems), 0.0f);
    for (std::int64_t i = 0; i < s.M; ++i)
      for (std::int64_t k = 0; k < s.K; ++k)
        A_[static_cast<std::size_t>(i * s.K + k)] = input(rank_ + 1, i, k);
    for (std::int64_t k = 0; k < s.K; ++k)
      for (std::int64_t j = 0; j < s.N; ++j)
        B_[static_cast<std::size_t>(k * t_.Np + j)] = input(kBSeed, k, j);
    for (int w = 0; w < cfg.compute_workers; ++w)
      queues_.push_back(std::make_unique<SpscQueue>(static_cast<std::size_t>(t_.tiles)));
  }

  // Outside timing: counters and queues back to zero on every rank.
  void reset() {
    std::memset(base_[static_cast<std::size_t>(rank_)], 0, lay_.stage);
    for (auto& q : queues_) q->reset();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    win_.sync();
    rt_.barrier();
    win_.sync();
  }

  void compute(bool signal, Crew& crew, Clock::time_point* done) {
    auto finished = std::make_shared<std::atomic<int>>(0);
    for (int w = 0; w < cfg_.compute_workers; ++w)
      crew.spawn([this, w, signal, finished, done] {
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

  void communicate(Crew& crew) {
    for (int b = 0; b < cfg_.comm_workers; ++b) crew.spawn([this, b] { comm_worker(b); });
  }

  // Every tile "computed": fills the queues as the compute workers would.
  void prefill() {
    for (int w = 0; w < cfg_.compute_workers; ++w)
      for (std::int64_t tile : t_.worker_tiles(w, cfg_.compute_workers))
        if (tile != cfg_.drop_tile) queues_[static_cast<std::size_t>(w)]->push(tile);
  }

  void compute_all_now() {
    for (std::int64_t tile = 0; tile < t_.tiles; ++tile) compute_tile(tile);
  }

  // Waits until every subtile of the output has arrived here.
  void wait_output() {
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

  const float* output() const {
    return reinterpret_cast<const float*>(base_[static_cast<std::size_t>(rank_)] + lay_.output);
  }
  const std::vector<float>& A() const { return A_; }
  const std::vector<float>& B() const { return B_; }
  std::vector<float>& C() { return C_; }

 private:
  Clock::duration watchdog() const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(cfg_.watchdog_s));
  }

  std::atomic<std::uint32_t>& counter(int r, std::size_t region, std::int64_t i) {
    return reinterpret_cast<PaddedCounter*>(base_[static_cast<std::size_t>(r)] + region)[i].value;
  }

  void ring(int r, int worker) {
    auto& d = counter(r, lay_.doorbells, worker);
    d.fetch_add(1, std::memory_order_release);
    wake_all(d);
  }

  float* stage(int r, int src, std::int64_t tl) {
    return reinterpret_cast<float*>(base_[static_cast<std::size_t>(r)] + lay_.stage) +
           (src * t_.max_owned() + tl) * t_.tile_elems;
  }

  void compute_tile(std::int64_t tile) {
    const auto& s = t_.shape;
    const std::int64_t tr = tile / t_.tiles_n, tc = tile % t_.tiles_n;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.base_m),
                static_cast<int>(s.base_n), static_cast<int>(s.K), 1.0f,
                A_.data() + tr * s.base_m * s.K, static_cast<int>(s.K), B_.data() + tc * s.base_n,
                static_cast<int>(t_.Np), 0.0f, C_.data() + tile * t_.tile_elems,
                static_cast<int>(s.base_n));
  }

  // Reduce-scatter of one tile: each subtile into the owner's stage slot for
  // this rank, then its ready counter and the owner's AG doorbell.
  void reduce_scatter(std::int64_t tile) {
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
  void all_gather(std::int64_t tl, std::int64_t s, std::vector<float>& sum) {
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

  void comm_worker(int b) {
    struct Pending {
      std::int64_t tl, s;
    };
    std::vector<int> my_queues;
    std::vector<std::vector<std::int64_t>> expect;  // per queue, in order
    std::size_t rs_total = 0, rs_done = 0;
    for (int q = b; q < cfg_.compute_workers; q += cfg_.comm_workers) {
      my_queues.push_back(q);
      expect.push_back(t_.worker_tiles(q, cfg_.compute_workers));
      rs_total += expect.back().size();
    }
    std::vector<std::size_t> seen(my_queues.size(), 0);
    std::vector<Pending> ag;
    for (std::int64_t tl = 0; tl < t_.owned_tiles(rank_); ++tl)
      for (std::int64_t s = 0; s < t_.subtiles; ++s)
        if (t_.ag_worker(tl, s, cfg_.comm_workers) == b) ag.push_back({tl, s});
    std::vector<float> sum(static_cast<std::size_t>(t_.shape.comm_sub_m * t_.shape.base_n));
    auto& bell = counter(rank_, lay_.doorbells, b);
    auto deadline = Clock::now() + watchdog();
    while (rs_done < rs_total || !ag.empty()) {
      const std::uint32_t rung = bell.load(std::memory_order_acquire);
      bool progress = false;
      for (std::size_t i = 0; i < my_queues.size(); ++i)
        for (std::int64_t tile; queues_[static_cast<std::size_t>(my_queues[i])]->pop(&tile);) {
          reduce_scatter(tile);
          ++seen[i];
          ++rs_done;
          progress = true;
        }
      for (std::size_t i = 0; i < ag.size();) {
        auto& ready = counter(rank_, lay_.sub_ready, ag[i].tl * t_.subtiles + ag[i].s);
        if (ready.load(std::memory_order_acquire) == static_cast<std::uint32_t>(n_)) {
          all_gather(ag[i].tl, ag[i].s, sum);
          ag[i] = ag.back();
          ag.pop_back();
          progress = true;
        } else {
          ++i;
        }
      }
      if (progress) {
        deadline = Clock::now() + watchdog();
        continue;
      }
      if (Clock::now() > deadline) throw stuck(b, my_queues, expect, seen, ag);
      sleep_while(bell, rung, 50);
    }
  }

  template <class P>
  RuntimeError stuck(int b, const std::vector<int>& qs,
                     const std::vector<std::vector<std::int64_t>>& expect,
                     const std::vector<std::size_t>& seen, const std::vector<P>& ag) {
    for (std::size_t i = 0; i < qs.size(); ++i)
      if (seen[i] < expect[i].size())
        return RuntimeError(fmt::format(
            "watchdog: rank {} comm worker {}: tile {} of compute worker {} never became "
            "ready after {} s",
            rank_, b, expect[i][seen[i]], qs[i], cfg_.watchdog_s));
    const auto& p = ag.front();
    return RuntimeError(fmt::format(
        "watchdog: rank {} comm worker {}: tile {} subtile {} has {} of {} contributions "
        "after {} s",
        rank_, b, p.tl * n_ + rank_, p.s,
        counter(rank_, lay_.sub_ready, p.tl * t_.subtiles + p.s).load(), n_, cfg_.watchdog_s));
  }

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

struct Phases {
  std::vector<double> compute, comm, sequential, pipelined, compute_done, mpi;
};

double timed(Runtime& rt, const std::function<void()>& f) {
  rt.barrier();
  const auto t0 = Clock::now();
  f();
  return rt.max(elapsed_us(t0, Clock::now()));
}

// Per-rank check against sum_i A_i x B in float64 (computed as (sum_i A_i) x B).
std::pair<double, std::int64_t> verify(const Operator& op, const Tiling& t, const GemmArConfig& cfg,
                                       int nranks) {
  const auto& s = t.shape;
  std::vector<double> S(static_cast<std::size_t>(s.M * s.K), 0.0),
      B(static_cast<std::size_t>(s.K * s.N));
  for (int r = 0; r < nranks; ++r)
    for (std::int64_t i = 0; i < s.M; ++i)
      for (std::int64_t k = 0; k < s.K; ++k)
        S[static_cast<std::size_t>(i * s.K + k)] += input(r + 1, i, k);
  for (std::int64_t k = 0; k < s.K; ++k)
    for (std::int64_t j = 0; j < s.N; ++j)
      B[static_cast<std::size_t>(k * s.N + j)] = input(kBSeed, k, j);
  std::vector<double> ref(static_cast<std::size_t>(s.M * s.N));
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.M),
              static_cast<int>(s.N), static_cast<int>(s.K), 1.0, S.data(), static_cast<int>(s.K),
              B.data(), static_cast<int>(s.N), 0.0, ref.data(), static_cast<int>(s.N));
  const double atol = cfg.atol >= 0 ? cfg.atol : 1e-3 * static_cast<double>(s.K);
  double max_err = 0;
  std::int64_t wrong = 0;
  const float* out = op.output();
  for (std::int64_t i = 0; i < s.M; ++i)
    for (std::int64_t j = 0; j < s.N; ++j) {
      const double want = ref[static_cast<std::size_t>(i * s.N + j)];
      const double err = std::fabs(static_cast<double>(out[i * t.Np + j]) - want);
      max_err = std::max(max_err, err);
      if (!(err <= atol + cfg.rtol * std::fabs(want))) ++wrong;
    }
  return {max_err, wrong};
}

Record mode_record(const char* kase, const std::vector<double>& us, Bytes bytes) {
  Record r;
  r.kase = kase;
  r.method = "host";
  r.bytes = bytes;
  r.set_samples(us);
  return r;
}

double median(std::vector<double> v) { return compute_stats(v).median; }

}  // namespace

void validate_gemm_ar(Runtime& rt, const GemmArConfig& cfg) {
  std::string err;
  try {
    if (rt.size() < 2)
      throw UsageError("gemm-ar needs at least 2 ranks: run under `mpiexec -n 2` or add --ranks 2");
    if (!rt.single_host())
      throw UsageError("gemm-ar on the host backend needs all ranks on one host (shared windows)");
    if (cfg.iters < 1 || cfg.warmup < 0)
      throw UsageError("-n must be at least 1 and -w at least 0");
    const Tiling t = make_tiling(cfg.shape, rt.size(), cfg.compute_workers, cfg.comm_workers);
    const auto need =
        window_layout(t, cfg.comm_workers).bytes * static_cast<Bytes>(rt.size()) +
        static_cast<Bytes>(t.Mp * cfg.shape.K + cfg.shape.K * t.Np + 2 * t.Mp * t.Np) * 4 *
            static_cast<Bytes>(rt.size());
    if (available_memory() && need > available_memory())
      throw UsageError(fmt::format("the shape needs {} on this host, only {} is available",
                                   format_capacity(need), format_capacity(available_memory())));
  } catch (const UsageError& e) {
    err = e.what();
  }
  err = rt.agree(err);
  if (!err.empty()) throw UsageError(err);
}

GemmArResult run_gemm_ar(Runtime& rt, const GemmArConfig& cfg) {
  openblas_set_num_threads(1);  // one BLAS thread per compute worker
  const Tiling t = make_tiling(cfg.shape, rt.size(), cfg.compute_workers, cfg.comm_workers);
  const WindowLayout lay = window_layout(t, cfg.comm_workers);
  auto win = rt.allocate_window(lay.bytes, Transport::shm);
  Operator op(rt, cfg, *win, t);
  Phases ph;
  const bool all = cfg.mode == GemmArMode::all;
  const auto bytes = static_cast<Bytes>(cfg.shape.M * cfg.shape.N) * sizeof(float);
  auto comm = make_mpi_communicator(rt);
  std::vector<float> mpi_out(op.C().size());
  for (int it = 0; it < cfg.warmup + cfg.iters; ++it) {
    const bool keep = it >= cfg.warmup;
    if (all) {
      const double c = timed(rt, [&] {
        Crew crew;
        op.compute(false, crew, nullptr);
        crew.join();
      });
      op.reset();
      op.prefill();
      const double m = timed(rt, [&] {
        Crew crew;
        op.communicate(crew);
        crew.join();
        op.wait_output();
      });
      const double mp = timed(rt, [&] {
        comm->allreduce(op.C().data(), mpi_out.data(), op.C().size(), DType::float32, RedOp::sum);
      });
      if (keep) {
        ph.compute.push_back(c);
        ph.comm.push_back(m);
        ph.mpi.push_back(mp);
      }
    }
    if (all || cfg.mode == GemmArMode::sequential) {
      op.reset();
      const double s = timed(rt, [&] {
        Crew crew;
        op.compute(true, crew, nullptr);
        crew.join();
        op.communicate(crew);
        crew.join();
        op.wait_output();
      });
      if (keep) ph.sequential.push_back(s);
    }
    if (all || cfg.mode == GemmArMode::pipelined) {
      op.reset();
      Clock::time_point done{};
      auto t0 = Clock::now();
      const double p = timed(rt, [&] {
        t0 = Clock::now();
        Crew crew;
        op.compute(true, crew, &done);
        op.communicate(crew);
        op.wait_output();
        crew.join();
      });
      if (keep) {
        ph.pipelined.push_back(p);
        ph.compute_done.push_back(rt.max(elapsed_us(t0, done)));
      }
    }
  }
  GemmArResult res;
  if (!ph.compute.empty()) {
    res.records.push_back(mode_record("compute", ph.compute, 0));
    res.records.push_back(mode_record("comm", ph.comm, bytes));
    res.records.push_back(mode_record("mpi_allreduce", ph.mpi, bytes));
  }
  if (!ph.sequential.empty())
    res.records.push_back(mode_record("sequential", ph.sequential, bytes));
  if (!ph.pipelined.empty()) res.records.push_back(mode_record("pipelined", ph.pipelined, bytes));
  Record sum = mode_record("gemm_ar", ph.pipelined.empty() ? ph.sequential : ph.pipelined, bytes);
  const double flops = 2.0 * static_cast<double>(cfg.shape.M) * static_cast<double>(cfg.shape.N) *
                       static_cast<double>(cfg.shape.K);
  sum.set(gemm_field::M, cfg.shape.M);
  sum.set(gemm_field::K, cfg.shape.K);
  sum.set(gemm_field::N, cfg.shape.N);
  sum.set(gemm_field::tiles, t.tiles);
  sum.set(gemm_field::waves, t.waves(cfg.compute_workers));
  sum.set(gemm_field::window_bytes, static_cast<std::int64_t>(lay.bytes));
  if (all) {
    const double c = median(ph.compute), m = median(ph.comm), s = median(ph.sequential),
                 p = median(ph.pipelined);
    const double w = static_cast<double>(t.waves(cfg.compute_workers));
    const double ideal = std::max(c, m) + std::min(c, m) / w;
    sum.set(gemm_field::compute_us, c);
    sum.set(gemm_field::comm_us, m);
    sum.set(gemm_field::mpi_allreduce_us, median(ph.mpi));
    sum.set(gemm_field::sequential_us, s);
    sum.set(gemm_field::pipelined_us, p);
    sum.set(gemm_field::compute_done_us, median(ph.compute_done));
    sum.set(gemm_field::speedup, s / p);
    sum.set(gemm_field::time_saved_us, s - p);
    sum.set(gemm_field::overlap_eff, (c + m - p) / std::min(c, m));
    sum.set(gemm_field::ideal_us, ideal);
    sum.set(gemm_field::ideal_ratio, ideal / p);
    sum.set(gemm_field::gflops, flops / (c * 1e3));
    sum.set(gemm_field::comm_gbps, static_cast<double>(bytes) / (m * 1e3));
  }
  if (cfg.check) {
    const auto [max_err, wrong] = verify(op, t, cfg, rt.size());
    const double all_wrong = rt.sum(static_cast<double>(wrong));
    sum.set(gemm_field::max_err, rt.max(max_err));
    sum.set(gemm_field::wrong, static_cast<std::int64_t>(all_wrong));
    sum.verified = all_wrong == 0;
    if (all_wrong > 0) {
      sum.status = Status::failed;
      sum.reason = fmt::format("{} elements outside atol + rtol*|ref| over all ranks",
                               static_cast<std::int64_t>(all_wrong));
    }
  }
  res.records.push_back(sum);
  rt.barrier();
  return res;
}

}  // namespace xb
