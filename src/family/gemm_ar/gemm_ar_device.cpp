// gemm-ar on a device backend: the backend's fused operator (coll/fused.hpp)
// measured with the host path's phases, records and check; and the
// --comm-blocks interference sweep.
#include <fmt/format.h>

#include <algorithm>

#include "coll/communicator.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "family/agree.hpp"
#include "family/cycles.hpp"
#include "family/gemm_ar/gemm_ar_bench.hpp"
#include "family/gemm_ar/gemm_ar_inputs.hpp"
#include "family/gemm_ar/gemm_ar_phases.hpp"

namespace xb {
namespace {

double median(std::vector<double> v) { return compute_stats(v).median; }

// The library baseline on device memory, when the backend's library takes
// these ranks (NCCL: one GPU per rank); else none, and the note says why.
struct Library {
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Buffer> send, recv;
  std::string why_not;
};

Library make_library(Runtime& rt, Backend& be, std::size_t count) {
  Library lib;
  if (const Support s = be.communicator_fits(rt); !s.ok) {
    lib.why_not = s.reason;
    return lib;
  }
  lib.comm = be.communicator(rt);
  const Bytes bytes = count * sizeof(float);
  lib.send = be.allocate(lib.comm->buffer_kind(), lib.comm->device(), bytes);
  lib.recv = be.allocate(lib.comm->buffer_kind(), lib.comm->device(), bytes);
  return lib;
}

// Collective: the operator, made once every rank agreed it fits, with the
// inputs uploaded.
std::unique_ptr<FusedGemmAllReduce> make_operator(Runtime& rt, Backend& be, const FusedConfig& fc,
                                                  const Tiling& t) {
  std::string err;
  if (const Support s = be.fused_fits(rt, fc); !s.ok) err = s.reason;
  err = rt.agree(err);
  if (!err.empty()) throw UsageError(err);
  std::unique_ptr<FusedGemmAllReduce> op;
  agree_or_throw(rt, [&] {
    op = be.fused_gemm_allreduce(rt, fc);
    std::vector<float> A, B;
    fill_gemm_ar_inputs(t, rt.rank(), A, B);
    op->set_inputs(A, B);
  });
  return op;
}

// Collective: a phase's time on every rank, the max over ranks.
FusedTimes run_max(Runtime& rt, FusedGemmAllReduce& op, FusedPhase p) {
  FusedTimes t;
  agree_or_throw(rt, [&] { t = op.run(p); });
  t.total_us = rt.max(t.total_us);
  t.compute_us = rt.max(t.compute_us);
  t.comm_us = rt.max(t.comm_us);
  return t;
}

double check_atol(const GemmArConfig& cfg) {
  return cfg.atol >= 0 ? cfg.atol : fused_default_atol(cfg.dtype, cfg.shape.K);
}

GemmArOutcome outcome(const GemmArConfig& cfg, const FusedPlan& plan, const std::vector<float>& out,
                      const std::string& library) {
  GemmArOutcome o;
  o.tiling = &plan.t;
  o.waves = plan.waves;
  o.window_bytes = static_cast<std::int64_t>(plan.window.bytes);
  o.output = out.data();
  o.atol = check_atol(cfg);
  o.method = to_string(cfg.engine);
  o.library = library;
  return o;
}

// One --comm-blocks value of the sweep: compute alone, comm alone, both at
// once (the comm prefilled, so neither waits for the other), interleaved.
Record interference(Runtime& rt, FusedGemmAllReduce& op, const GemmArConfig& cfg, int blocks) {
  std::vector<double> c, m, bc, bm, both;
  for (int it = 0; it < cfg.warmup + cfg.iters; ++it) {
    stop_point(&rt);  // every rank, in step
    const bool keep = it >= cfg.warmup;
    // comm last: the GEMM of `interference` rewrites C under the comm
    // (same values), so the output checked afterwards comes from comm alone.
    const FusedTimes a = run_max(rt, op, FusedPhase::compute);
    const FusedTimes x = run_max(rt, op, FusedPhase::interference);
    const FusedTimes b = run_max(rt, op, FusedPhase::comm);
    if (!keep) continue;
    c.push_back(a.compute_us);
    m.push_back(b.comm_us);
    bc.push_back(x.compute_us);
    bm.push_back(x.comm_us);
    both.push_back(x.total_us);
  }
  Record r;
  r.kase = "interference";
  r.method = to_string(cfg.engine);
  r.bytes = static_cast<Bytes>(cfg.shape.M * cfg.shape.N) * sizeof(float);
  r.set_samples(both);
  r.set(gemm_field::comm_blocks, std::int64_t{blocks});
  r.set(gemm_field::compute_alone_us, median(c));
  r.set(gemm_field::comm_alone_us, median(m));
  r.set(gemm_field::compute_both_us, median(bc));
  r.set(gemm_field::comm_both_us, median(bm));
  r.set(gemm_field::compute_slowdown, median(bc) / median(c));
  r.set(gemm_field::comm_slowdown, median(bm) / median(m));
  return r;
}

// The check: each communicating phase the run measured goes once more,
// outside timing, into a poisoned output and stage (and product, for the
// phases that run the GEMM first): stale data equals fresh data otherwise
// (review finding 2). The last phase's output is held against the
// reference, the others against it. The --comm-blocks sweep measured comm
// alone and beside the GEMM (prefilled: its product is not poisoned, as the
// comm does not wait for it).
std::vector<float> checked_output(Runtime& rt, FusedGemmAllReduce& op, const GemmArConfig& cfg,
                                  bool sweep) {
  std::vector<FusedPhase> phases;
  if (sweep) phases = {FusedPhase::interference, FusedPhase::comm};
  if (!sweep && cfg.mode == GemmArMode::all) phases.push_back(FusedPhase::comm);
  if (!sweep && (cfg.mode == GemmArMode::all || cfg.mode == GemmArMode::sequential))
    phases.push_back(FusedPhase::sequential);
  if (!sweep && (cfg.mode == GemmArMode::all || cfg.mode == GemmArMode::pipelined))
    phases.push_back(FusedPhase::pipelined);
  std::vector<std::vector<float>> outs;
  for (const FusedPhase p : phases) {
    // comm alone reads the product the last GEMM left; so does a prefilled comm
    op.poison(p == FusedPhase::sequential || p == FusedPhase::pipelined);
    (void)run_max(rt, op, p);
    outs.push_back(op.output());
  }
  std::vector<float> last = std::move(outs.back());
  outs.pop_back();
  return merge_phase_outputs(last, outs, check_atol(cfg), cfg.rtol).first;
}

}  // namespace

FusedConfig fused_config(const GemmArConfig& cfg, int nranks, int blocks) {
  FusedConfig f;
  f.shape = cfg.shape;
  f.nranks = nranks;
  f.dtype = cfg.dtype;
  f.engine = cfg.engine;
  f.comm_blocks = blocks;
  f.wave_rows = cfg.wave_rows;
  f.watchdog_s = cfg.watchdog_s;
  f.drop_tile = cfg.drop_tile;
  return f;
}

GemmArResult run_gemm_ar_device(Runtime& rt, Backend& be, const GemmArConfig& cfg) {
  if (rt.size() < 2)
    throw UsageError("gemm-ar needs at least 2 ranks: run under `mpiexec -n 2` or add --ranks 2");
  if (cfg.iters < 1 || cfg.warmup < 0) throw UsageError("-n must be at least 1 and -w at least 0");
  if (cfg.comm_blocks.empty()) throw UsageError("--comm-blocks needs a value");
  // Every value checked before anything runs.
  for (const int b : cfg.comm_blocks) {
    std::string err;
    if (const Support s = be.fused_fits(rt, fused_config(cfg, rt.size(), b)); !s.ok) err = s.reason;
    err = rt.agree(err);
    if (!err.empty()) throw UsageError(err);
  }
  GemmArResult res;
  if (cfg.comm_blocks.size() > 1) {
    for (const int b : cfg.comm_blocks) {
      const FusedConfig fc = fused_config(cfg, rt.size(), b);
      const Tiling t = make_tiling(cfg.shape, rt.size(), 1, 1);
      auto op = make_operator(rt, be, fc, t);
      res.records.push_back(interference(rt, *op, cfg, b));
      res.placement = op->placement();
      if (cfg.check) {
        const std::vector<float> out = checked_output(rt, *op, cfg, /*sweep=*/true);
        set_check_fields(rt, res.records.back(), outcome(cfg, op->plan(), out, ""), cfg);
      }
      op->close();
    }
    return res;
  }

  const FusedConfig fc = fused_config(cfg, rt.size(), cfg.comm_blocks.front());
  const Tiling t = make_tiling(cfg.shape, rt.size(), 1, 1);
  auto op = make_operator(rt, be, fc, t);
  res.placement = op->placement();
  const std::size_t count = static_cast<std::size_t>(t.Mp * t.Np);
  Library lib;
  if (cfg.mode == GemmArMode::all) lib = make_library(rt, be, count);
  res.library_note = lib.why_not;
  Phases ph;
  interleave(
      rt, cfg,
      [&](bool keep) {
        const double c = run_max(rt, *op, FusedPhase::compute).compute_us;
        const double m = run_max(rt, *op, FusedPhase::comm).comm_us;
        double l = -1;
        if (lib.comm)
          l = time_library_allreduce(rt, *lib.comm, lib.send->data(), lib.recv->data(), count);
        if (!keep) return;
        ph.compute.push_back(c);
        ph.comm.push_back(m);
        if (lib.comm) ph.library.push_back(l);
      },
      [&](bool keep) {
        const double s = run_max(rt, *op, FusedPhase::sequential).total_us;
        if (keep) ph.sequential.push_back(s);
      },
      [&](bool keep) {
        const FusedTimes p = run_max(rt, *op, FusedPhase::pipelined);
        if (!keep) return;
        ph.pipelined.push_back(p.total_us);
        ph.compute_done.push_back(p.compute_us);
      });
  const std::vector<float> out = cfg.check ? checked_output(rt, *op, cfg, false) : op->output();
  add_gemm_ar_records(rt, cfg, outcome(cfg, op->plan(), out, lib.comm ? lib.comm->name() : ""), ph,
                      res.records);
  op->close();
  rt.barrier();
  return res;
}

}  // namespace xb
