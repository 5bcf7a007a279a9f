// `xferbench gemm-ar`: fused GEMM + AllReduce with tile-level overlap.
#include "family/gemm_ar/gemm_ar_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <limits>

#include "coll/dtype.hpp"
#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "family/gemm_ar/gemm_ar_bench.hpp"
#include "family/options.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

class GemmArFamily final : public Family {
 public:
  GemmArFamily() {
    using namespace gemm_field;
    for (auto k : {M, K, N}) schema_.add(k, FieldRole::key, "GEMM shape");
    schema_.add(tiles, FieldRole::info, "output tiles")
        .add(waves, FieldRole::info, "tiles per compute worker, rounded up")
        .add(window_bytes, FieldRole::info, "symmetric window per rank, bytes");
    for (auto k : {compute_us, comm_us, library_allreduce_us, sequential_us, pipelined_us,
                   compute_done_us, compute_alone_us, comm_alone_us, compute_both_us, comm_both_us})
      schema_.add(k, FieldRole::metric, "median over the timed iterations, us");
    schema_.add(time_saved_us, FieldRole::metric, "sequential_us - pipelined_us, us")
        .add(ideal_us, FieldRole::metric,
             "max(compute, comm) + min(compute, comm) / waves: the pipelined ideal, us");
    schema_.add(speedup, FieldRole::metric, "sequential / pipelined")
        .add(overlap_eff, FieldRole::metric, "(compute + comm - pipelined) / min(compute, comm)")
        .add(overlap_note, FieldRole::info, "what overlap_eff says, or why it gives no figure")
        .add(ideal_ratio, FieldRole::metric, "ideal pipelined time / pipelined time")
        .add(gflops, FieldRole::metric, "GEMM GFLOP/s per rank, compute-only")
        .add(comm_gbps, FieldRole::metric, "M x N x 4 bytes / comm-only time, GB/s")
        .add(compute_slowdown, FieldRole::metric, "compute beside the comm / compute alone")
        .add(comm_slowdown, FieldRole::metric, "comm beside the compute / comm alone")
        .add(comm_blocks, FieldRole::key, "thread blocks of the comm kernel (interference)")
        .add(max_err, FieldRole::info, "largest |C - float64 reference|")
        .add(wrong, FieldRole::info, "elements outside atol + rtol*|ref|, all ranks");
  }
  std::string name() const override { return "gemm-ar"; }
  std::string summary() const override {
    return "fused GEMM + AllReduce with tile-level compute/comm overlap";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override {
    r.add({"gemm-ar.fused", "gemm-ar",
           "C = sum over ranks of A_i x B: compute-only, comm-only, sequential, pipelined",
           [](const Capabilities& c) {
             return c.backend == "host" || c.device_ipc
                        ? Support::yes()
                        : Support::no(
                              "the fused operator shares device windows between ranks, "
                              "which this backend cannot");
           }});
  }
  std::string table_note(const Report& r) const override {
    std::string note =
        "time in us: each iteration's time is the max over ranks; median over the timed "
        "iterations; the phases interleaved in alternating order\n";
    const auto count = [&](const char* k) {
      const FieldValue* v = find_field(r.params, k);
      return v && std::holds_alternative<std::int64_t>(*v) ? std::get<std::int64_t>(*v) : 0;
    };
    const std::int64_t c = count("compute_workers"), m = count("comm_workers");
    if (const FieldValue* v = find_field(r.params, "placement");
        v && std::holds_alternative<std::string>(*v))
      note += fmt::format("rank 0 on {}\n", std::get<std::string>(*v));
    if (const FieldValue* v = find_field(r.params, "library_note");
        v && std::holds_alternative<std::string>(*v))
      note += fmt::format("no library allreduce baseline: {}\n", std::get<std::string>(*v));
    if (const FieldValue* v = find_field(r.params, "bound"); v && std::holds_alternative<bool>(*v))
      note += std::get<bool>(*v) ? "workers bound one per CPU (each rank on its share)\n"
                                 : "workers unbound: they do not fit one per CPU\n";
    if (r.env.backend == "host" && r.env.cores > 0 && r.env.ranks * (c + m) > r.env.cores)
      note += fmt::format(
          "note: {} ranks x ({} compute + {} comm) workers on {} cores: workers share cores, so "
          "pipelined cannot be expected to beat sequential here\n",
          r.env.ranks, c, m, r.env.cores);
    return note;
  }
  std::string tables(const Report& r) const override { return gemm_tables(r); }

  void add_options(CLI::App& app) override {
    auto& c = cfg_;
    c.shape.M = c.shape.K = c.shape.N = 512;
    app.add_option("-M", c.shape.M, "rows of A_i and C")->default_str("512");
    app.add_option("-K", c.shape.K, "inner dimension (multiple of base-k x step-k)")
        ->default_str("512");
    app.add_option("-N", c.shape.N, "columns of B and C")->default_str("512");
    app.add_option("--base-m", c.shape.base_m, "tile rows")->default_str("128");
    app.add_option("--base-n", c.shape.base_n, "tile columns")->default_str("128");
    app.add_option("--base-k", c.shape.base_k,
                   "K block of pto-isa's GEMM+AllReduce example; here it only constrains -K (the "
                   "host GEMM takes a tile's whole K in one sgemm)")
        ->default_str("64");
    app.add_option("--step-k", c.shape.step_k,
                   "K blocks per load in pto-isa's GEMM+AllReduce example; constrains -K too")
        ->default_str("4");
    app.add_option("--comm-sub-m", c.shape.comm_sub_m,
                   "subtile rows of the reduce-scatter/all-gather")
        ->default_str("32");
    app.add_option("--compute-workers", compute_workers_,
                   "threads computing tiles per rank (default: the rank's share of the host's "
                   "cores, less its comm workers)")
        ->check(CLI::Range(1, 4096));
    app.add_option("--comm-workers", comm_workers_,
                   "threads moving tiles per rank (default: one per 8 cores of the rank's share)")
        ->check(CLI::Range(1, 4096));
    app.add_option("--dtype", dtype_,
                   "A and B: half, bf16 or float (fp32 accumulation and output); default half "
                   "on a device backend, float on the host (the only one it computes)");
    device_opts_.push_back(
        app.add_option_function<std::string>(
               "--comm-engine",
               [this](const std::string& e) {
                 cfg_.engine = e == "ce" ? CommEngine::ce : CommEngine::sm;
               },
               "device backends: sm (a persistent comm kernel on --comm-blocks SMs kept from the "
               "GEMM) or ce (copy engines plus a reduce kernel of --comm-blocks thread blocks, "
               "no SMs kept from the GEMM)")
            ->check(CLI::IsMember({"sm", "ce"}))
            ->default_str("sm"));
    device_opts_.push_back(
        app.add_option(
               "--comm-blocks", comm_blocks_,
               "device backends: thread blocks of the comm kernel; a list (8,16,32) runs the "
               "interference sweep: compute alone, comm alone and both at once per value")
            ->default_str("8"));
    device_opts_.push_back(
        app.add_option(
               "--wave-rows", c.wave_rows,
               "device backends: tile rows per GEMM wave (default: enough tiles to fill the "
               "compute SMs)")
            ->check(CLI::Range(1, 1 << 20)));
    app.add_option_function<std::string>(
           "--mode",
           [this](const std::string& m) {
             cfg_.mode = m == "pipelined"    ? GemmArMode::pipelined
                         : m == "sequential" ? GemmArMode::sequential
                                             : GemmArMode::all;
           },
           "all (every metric), pipelined, sequential")
        ->check(CLI::IsMember({"all", "pipelined", "sequential"}))
        ->default_str("all");
    const double inf = std::numeric_limits<double>::infinity();
    number_in(app.add_option("--atol", c.atol, "absolute tolerance (default 1e-3 x K)"), 0, inf);
    number_in(app.add_option("--rtol", c.rtol, "relative tolerance"), 0, inf)->default_str("0.01");
    number_in(app.add_option("--watchdog", c.watchdog_s,
                             "seconds a counter may stay stuck before it is an error"),
              0.001, 3600.0)
        ->default_str("10");
    app.add_option("--drop-tile", c.drop_tile,
                   "test seam: this tile is never pushed, so the watchdog must name it")
        ->group("");  // hidden
    add_run_options(app, run_,
                    {.iters = "timed iterations (default 5)",
                     .warmup = "warm-up iterations (default 1)",
                     .check = "skip verification",
                     .ranks = true});
    app.footer(
        R"(C_final = sum over ranks of A_i x B (A_i: M x K per rank, B: K x N shared).
host: fp32, OpenBLAS per tile, compute and comm worker threads per rank.
cuda: cuBLAS GEMM waves (half/bf16/float inputs, fp32 accumulation) and a comm kernel
(--comm-engine sm) or copy engines (ce) over CUDA IPC windows; one GPU per local rank,
several ranks may share one GPU.
Examples:
  mpiexec -n 2 xferbench gemm-ar
  xferbench gemm-ar --ranks 4 -M 2048 -K 2048 -N 1024 --compute-workers 2 --comm-workers 1
  xferbench gemm-ar --ranks 2 --mode pipelined --format json -o gar.json
  mpiexec -n 2 xferbench gemm-ar --backend cuda -M 8192 -K 8192 -N 8192 --dtype bf16
  mpiexec -n 2 xferbench gemm-ar --backend cuda --comm-blocks 8,16,32,64)");
  }

  // Host-only and device-only options are refused on the other kind, so
  // `auto` passes a backend over when they do not apply.
  Support fits(Backend& b, Runtime* rt) const override {
    if (b.name() == "host") {
      if (cfg_.dtype != DType::float32)
        return Support::no(
            fmt::format("--dtype {}: the host backend computes float only", to_string(cfg_.dtype)));
      if (device_options_)
        return Support::no(
            "--comm-engine, --comm-blocks and --wave-rows are options of the device backends");
      return Support::yes();
    }
    if (compute_workers_ > 0 || comm_workers_ > 0)
      return Support::no("--compute-workers and --comm-workers are options of the host backend");
    if (!rt) return Support::yes();  // gemm-ar always runs ranked
    Support s = Support::yes();
    for (const int blocks : cfg_.comm_blocks) {
      GemmArConfig c = cfg_;
      if (c.dtype == DType::float32 && dtype_.empty()) c.dtype = DType::half;
      s = b.fused_fits(*rt, fused_config(c, rt->size(), blocks));
      if (!s.ok) break;
    }
    return s;
  }

  int run(const Invocation& inv) override {
    cfg_.iters = run_.iters_or(5);
    cfg_.warmup = run_.warmup_or(1);
    cfg_.check = !run_.no_check;
    cfg_.dtype = dtype_.empty() ? DType::float32 : parse_one_dtype(dtype_);
    cfg_.comm_blocks.clear();
    if (!comm_blocks_.empty())  // beyond the device's SMs is refused once the device is known
      cfg_.comm_blocks =
          each_once(parse_count_list("--comm-blocks", comm_blocks_, 1 << 20, "16 or 4,16,64"));
    device_options_ = false;
    for (const CLI::Option* o : device_opts_) device_options_ = device_options_ || o->count() > 0;
    Ranked r = start_ranked(*this, run_, inv, [&](Runtime& rt, Backend& be) {
      if (be.name() != "host") {
        if (dtype_.empty()) cfg_.dtype = DType::half;  // as pto-isa's GEMM+AllReduce example
        return;
      }
      auto [compute, comm] = default_workers(online_cores(), rt.size());
      try {  // defaults never ask for more workers than the shape has tiles
        const Tiling t = make_tiling(cfg_.shape, rt.size(), 1, 1);
        compute = static_cast<int>(std::min<std::int64_t>(compute, t.tiles));
        comm = static_cast<int>(std::min<std::int64_t>(comm, t.tiles * t.subtiles));
      } catch (const UsageError&) {  // a bad shape: validate_gemm_ar says so on every rank
      }
      cfg_.compute_workers = compute_workers_ > 0 ? compute_workers_ : compute;
      cfg_.comm_workers = comm_workers_ > 0 ? comm_workers_ : comm;
      cfg_.cpus = worker_cpus(allowed_cpus(), online_cores(), rt.local_rank(), rt.size(),
                              cfg_.compute_workers + cfg_.comm_workers);
      // Bound on every rank or on none, so the ranks' figures compare.
      if (rt.agree(cfg_.cpus.empty() ? "unbound" : "") != "") cfg_.cpus.clear();
      validate_gemm_ar(rt, cfg_);
    });
    r.begin_whole();
    const bool host = r.backend->name() == "host";
    GemmArResult res;
    if (host && !host_blas()) {
      Record w;
      w.kase = "gemm-ar";
      w.method = "host";
      w.status = Status::waived;
      w.reason =
          "host gemm-ar multiplies with OpenBLAS, which this build lacks (install libopenblas-dev "
          "or openblas-devel and configure again)";
      res.records.push_back(std::move(w));
    } else {
      res = host ? run_gemm_ar(*r.rt, cfg_) : run_gemm_ar_device(*r.rt, *r.backend, cfg_);
    }
    Params p = params(host);
    if (!res.placement.empty()) p.emplace_back("placement", res.placement);
    if (!res.library_note.empty()) p.emplace_back("library_note", res.library_note);
    return r.report(*this, {"gemm-ar", {}, std::move(p), std::move(res.records), {}}, run_);
  }

 private:
  static DType parse_one_dtype(const std::string& name) {
    const std::vector<DType> t = parse_dtypes(name);
    if (t.size() != 1) throw UsageError(fmt::format("--dtype '{}': one type", name));
    return t.front();
  }

  Params params(bool host) const {
    const auto& s = cfg_.shape;
    const char* mode = cfg_.mode == GemmArMode::pipelined    ? "pipelined"
                       : cfg_.mode == GemmArMode::sequential ? "sequential"
                                                             : "all";
    Params p = {{"M", s.M},
                {"K", s.K},
                {"N", s.N},
                {"base_m", s.base_m},
                {"base_n", s.base_n},
                {"base_k", s.base_k},
                {"step_k", s.step_k},
                {"comm_sub_m", s.comm_sub_m},
                {"dtype", std::string(to_string(cfg_.dtype))},
                {"mode", std::string(mode)},
                {"iters", std::int64_t{cfg_.iters}},
                {"warmup", std::int64_t{cfg_.warmup}}};
    if (host) {
      p.emplace_back("compute_workers", std::int64_t{cfg_.compute_workers});
      p.emplace_back("comm_workers", std::int64_t{cfg_.comm_workers});
      p.emplace_back("bound", !cfg_.cpus.empty());
    } else {
      p.emplace_back("comm_engine", std::string(to_string(cfg_.engine)));
      p.emplace_back("comm_blocks", join_numbers(cfg_.comm_blocks));
      p.emplace_back("wave_rows", std::int64_t{cfg_.wave_rows});
    }
    return p;
  }

  GemmArConfig cfg_;
  int compute_workers_ = 0, comm_workers_ = 0;  // 0: default_workers()
  std::string dtype_;                           // "": half on devices, float on host
  std::string comm_blocks_ = "8";
  bool device_options_ = false;
  std::vector<CLI::Option*> device_opts_;
  RunOptions run_;
  RecordSchema schema_{"gemm-ar"};
};

}  // namespace

std::unique_ptr<Family> make_gemm_ar_family() { return std::make_unique<GemmArFamily>(); }

}  // namespace xb
