#include "family/gemm_ar/gemm_ar_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "coll/communicator.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "family/cycles.hpp"
#include "family/gemm_ar/gemm_ar_inputs.hpp"
#include "family/gemm_ar/gemm_ar_op.hpp"
#include "family/gemm_ar/gemm_ar_phases.hpp"

#ifdef XFERBENCH_HAVE_OPENBLAS
extern "C" void openblas_set_num_threads(int);
#endif

namespace xb {
namespace {

// Collective: f() between a barrier and the max over ranks of its time.
double timed(Runtime& rt, const std::function<void()>& f) {
  rt.barrier(Runtime::Wait::spin);
  const auto t0 = Clock::now();
  f();
  return rt.max(elapsed_us(t0, Clock::now()));
}

// Mode `all` only: compute alone, the fused communication alone (queues
// prefilled), and MPI_Allreduce of the same bytes for comparison.
void measure_apart(Runtime& rt, GemmArOperator& op, Communicator& comm, std::vector<float>& mpi_out,
                   bool keep, Phases& ph) {
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
  const double mp = time_library_allreduce(rt, comm, op.C().data(), mpi_out.data(), op.C().size());
  if (keep) {
    ph.compute.push_back(c);
    ph.comm.push_back(m);
    ph.library.push_back(mp);
  }
}

// Every tile computed (and signalled), then all of it communicated.
void measure_sequential(Runtime& rt, GemmArOperator& op, bool keep, Phases& ph) {
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

// Compute and communication overlapped tile by tile; also when the last
// compute worker finished, from the start of the timed region.
void measure_pipelined(Runtime& rt, GemmArOperator& op, bool keep, Phases& ph) {
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

Record mode_record(const char* kase, const std::string& method, const std::vector<double>& us,
                   Bytes bytes) {
  Record r;
  r.kase = kase;
  r.method = method;
  r.bytes = bytes;
  r.set_samples(us);
  return r;
}

double median(std::vector<double> v) { return compute_stats(v).median; }

// Mode `all` only: medians of the phases and what overlap gained. The ideal
// is max(c, m) + min(c, m) / waves: the shorter phase hidden but for one wave.
void set_overlap_fields(Record& sum, const Phases& ph, const GemmArConfig& cfg, double waves,
                        Bytes bytes) {
  const double flops = 2.0 * static_cast<double>(cfg.shape.M) * static_cast<double>(cfg.shape.N) *
                       static_cast<double>(cfg.shape.K);
  const double c = median(ph.compute), m = median(ph.comm), s = median(ph.sequential),
               p = median(ph.pipelined);
  const double ideal = std::max(c, m) + std::min(c, m) / waves;
  sum.set(gemm_field::compute_us, c);
  sum.set(gemm_field::comm_us, m);
  if (!ph.library.empty()) sum.set(gemm_field::library_allreduce_us, median(ph.library));
  sum.set(gemm_field::sequential_us, s);
  sum.set(gemm_field::pipelined_us, p);
  sum.set(gemm_field::compute_done_us, median(ph.compute_done));
  sum.set(gemm_field::speedup, s / p);
  sum.set(gemm_field::time_saved_us, s - p);
  sum.set(gemm_field::overlap_eff, (c + m - p) / std::min(c, m));
  sum.set(gemm_field::overlap_note, overlap_verdict(c, m, s, p).text);
  sum.set(gemm_field::ideal_us, ideal);
  sum.set(gemm_field::ideal_ratio, ideal / p);
  sum.set(gemm_field::gflops, flops / (c * 1e3));
  sum.set(gemm_field::comm_gbps, static_cast<double>(bytes) / (m * 1e3));
}

}  // namespace

void set_check_fields(Runtime& rt, Record& sum, const GemmArOutcome& o, const GemmArConfig& cfg) {
  const auto [max_err, wrong] =
      check_gemm_ar_output(o.output, *o.tiling, rt.size(), o.atol, cfg.rtol);
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

OverlapVerdict overlap_verdict(double c, double m, double s, double p) {
  OverlapVerdict v;
  const double lo = std::min(c, m), hi = std::max(c, m);
  if (!(p < s)) {
    v.text = fmt::format("no overlap gain: pipelined {:.1f} us slower than sequential", p - s);
  } else if (p < hi) {
    v.text = fmt::format(
        "no efficiency figure: pipelined ({:.1f} us) beat the longer phase alone ({:.1f} us), so "
        "the phases ran under different conditions; re-run with more -n",
        p, hi);
  } else if (lo < 0.02 * hi) {
    v.text = fmt::format(
        "no efficiency figure: the shorter phase ({:.1f} us) is under 2% of the longer ({:.1f} "
        "us), nothing worth hiding",
        lo, hi);
  } else {
    v.figure = true;
    v.efficiency = (c + m - p) / lo;
    v.text = fmt::format("overlap efficiency {:.1f}%", v.efficiency * 100);
  }
  return v;
}

std::pair<int, int> default_workers(int cores, int ranks_on_host) {
  const int per_rank = std::max(1, cores / std::max(1, ranks_on_host));
  const int comm = std::max(1, per_rank / 8);
  return {std::max(1, per_rank - comm), comm};
}

std::vector<int> worker_cpus(const std::vector<int>& allowed, int online, int local_rank,
                             int ranks_on_host, int workers) {
  std::vector<int> share = allowed;
  if (static_cast<int>(allowed.size()) >= online && ranks_on_host > 1) {
    const auto per = allowed.size() / static_cast<std::size_t>(ranks_on_host);
    const auto first = per * static_cast<std::size_t>(local_rank);
    if (per == 0 || first + per > allowed.size()) return {};
    share.assign(allowed.begin() + static_cast<std::ptrdiff_t>(first),
                 allowed.begin() + static_cast<std::ptrdiff_t>(first + per));
  }
  if (workers < 1 || static_cast<int>(share.size()) < workers) return {};
  share.resize(static_cast<std::size_t>(workers));
  return share;
}

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
    if (const std::string s = memory_shortfall("the shape", need, " on this host"); !s.empty())
      throw UsageError(s);
  } catch (const UsageError& e) {
    err = e.what();
  }
  err = rt.agree(err);
  if (!err.empty()) throw UsageError(err);
}

void interleave(Runtime& rt, const GemmArConfig& cfg, const std::function<void(bool)>& apart,
                const std::function<void(bool)>& sequential,
                const std::function<void(bool)>& pipelined) {
  const bool all = cfg.mode == GemmArMode::all;
  const bool seq = all || cfg.mode == GemmArMode::sequential;
  const bool pipe = all || cfg.mode == GemmArMode::pipelined;
  for (int it = 0; it < cfg.warmup + cfg.iters; ++it) {
    stop_point(&rt);  // every rank, in step
    const bool keep = it >= cfg.warmup;
    if (it % 2 == 0) {
      if (all) apart(keep);
      if (seq) sequential(keep);
      if (pipe) pipelined(keep);
    } else {
      if (pipe) pipelined(keep);
      if (seq) sequential(keep);
      if (all) apart(keep);
    }
  }
}

double time_library_allreduce(Runtime& rt, Communicator& comm, const void* send, void* recv,
                              std::size_t count) {
  rt.barrier(Runtime::Wait::spin);
  if (auto marks = comm.stream_marks(2)) {
    marks->mark(0);
    comm.allreduce(send, recv, count, DType::float32, RedOp::sum);
    marks->mark(1);
    comm.synchronize();
    return rt.max(marks->elapsed_us(0, 1));
  }
  const auto t0 = Clock::now();
  comm.allreduce(send, recv, count, DType::float32, RedOp::sum);
  return rt.max(elapsed_us(t0, Clock::now()));
}

void add_gemm_ar_records(Runtime& rt, const GemmArConfig& cfg, const GemmArOutcome& o,
                         const Phases& ph, std::vector<Record>& out) {
  const auto bytes = static_cast<Bytes>(cfg.shape.M * cfg.shape.N) * sizeof(float);
  if (!ph.compute.empty()) {
    out.push_back(mode_record("compute", o.method, ph.compute, 0));
    out.push_back(mode_record("comm", o.method, ph.comm, bytes));
    if (!ph.library.empty())
      out.push_back(mode_record("library_allreduce", o.library, ph.library, bytes));
  }
  if (!ph.sequential.empty())
    out.push_back(mode_record("sequential", o.method, ph.sequential, bytes));
  if (!ph.pipelined.empty()) out.push_back(mode_record("pipelined", o.method, ph.pipelined, bytes));
  Record sum =
      mode_record("gemm_ar", o.method, ph.pipelined.empty() ? ph.sequential : ph.pipelined, bytes);
  sum.set(gemm_field::M, cfg.shape.M);
  sum.set(gemm_field::K, cfg.shape.K);
  sum.set(gemm_field::N, cfg.shape.N);
  sum.set(gemm_field::tiles, o.tiling->tiles);
  sum.set(gemm_field::waves, o.waves);
  sum.set(gemm_field::window_bytes, o.window_bytes);
  if (cfg.mode == GemmArMode::all)
    set_overlap_fields(sum, ph, cfg, static_cast<double>(o.waves), bytes);
  if (cfg.check) set_check_fields(rt, sum, o, cfg);
  out.push_back(std::move(sum));
}

bool host_blas() {
#ifdef XFERBENCH_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

GemmArResult run_gemm_ar(Runtime& rt, const GemmArConfig& cfg) {
#ifdef XFERBENCH_HAVE_OPENBLAS
  openblas_set_num_threads(1);  // one BLAS thread per compute worker
#else
  throw RuntimeError("host gemm-ar needs OpenBLAS (not in this build)");
#endif
  const Tiling t = make_tiling(cfg.shape, rt.size(), cfg.compute_workers, cfg.comm_workers);
  const WindowLayout lay = window_layout(t, cfg.comm_workers);
  auto win = rt.allocate_window(lay.bytes, Transport::shm);
  GemmArOperator op(rt, cfg, *win, t);
  auto comm = make_mpi_communicator(rt);
  std::vector<float> mpi_out(op.C().size());
  Phases ph;
  interleave(
      rt, cfg, [&](bool keep) { measure_apart(rt, op, *comm, mpi_out, keep, ph); },
      [&](bool keep) { measure_sequential(rt, op, keep, ph); },
      [&](bool keep) { measure_pipelined(rt, op, keep, ph); });
  GemmArOutcome o;
  o.tiling = &t;
  o.waves = t.waves(cfg.compute_workers);
  o.window_bytes = static_cast<std::int64_t>(lay.bytes);
  o.output = op.output();
  o.atol = cfg.atol >= 0 ? cfg.atol : 1e-3 * static_cast<double>(cfg.shape.K);
  o.method = "host";
  o.library = comm->name();
  GemmArResult res;
  add_gemm_ar_records(rt, cfg, o, ph, res.records);
  rt.barrier();
  return res;
}

}  // namespace xb
