// `xferbench coll`: nccl-tests options -> CollConfig -> records -> report.
#include "family/coll/coll_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/error.hpp"
#include "family/coll/coll_bench.hpp"
#include "family/cycles.hpp"
#include "family/options.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

class CollFamily final : public Family {
 public:
  CollFamily() {
    schema_.add(coll_field::op, FieldRole::key, "the collective")
        .add(coll_field::dtype, FieldRole::key, "element type")
        .add(coll_field::redop, FieldRole::key, "reduction (none for data movement)")
        .add(coll_field::count, FieldRole::info, "elements, nccl-tests' count")
        .add(coll_field::inplace, FieldRole::key, "in place (true) or out of place")
        .add(coll_field::algbw, FieldRole::metric, "size / time, GB/s")
        .add(coll_field::busbw, FieldRole::metric, "algbw x bus factor, GB/s")
        .add(coll_field::wrong, FieldRole::info,
             "elements that differ, all ranks; -1 unchecked; --check every: those of the first "
             "wrong iteration on its first rank")
        .add(coll_field::wrong_ranks, FieldRole::info,
             "--check every: the ranks that saw wrong data, with their wrong iterations")
        .add(coll_field::skew, FieldRole::key, "alltoallv: how counts spread over destinations")
        .add(coll_field::pair_counts, FieldRole::info,
             "alltoallv: elements rank s sent rank d, at s * ranks + d")
        .add(coll_field::slowest_rank, FieldRole::info,
             "the rank the others waited for (largest median own time); absent where the "
             "timing cannot tell the ranks apart (device streams)")
        .add(coll_field::slowest_host, FieldRole::info, "the host of slowest_rank")
        .add(coll_field::rank_spread, FieldRole::info,
             "slowest rank's median own time / the other ranks' median")
        .add(coll_field::slowest_share, FieldRole::info,
             "fraction of iterations in which slowest_rank was the slowest")
        .add(coll_field::rank_nics, FieldRole::info,
             "ranks on several hosts: each rank's NIC that moved the most over the timed calls, "
             "rank by rank (\"\": none moved bytes, e.g. shared memory or no counters)")
        .add(coll_field::rank_nic_tx_bytes, FieldRole::info,
             "bytes each rank's NIC counted sending over the timed calls (the host's counters)")
        .add(coll_field::rank_nic_rx_bytes, FieldRole::info,
             "bytes each rank's NIC counted receiving")
        .add(coll_field::wire_gbps, FieldRole::info,
             "median over the ranks of their NIC's bytes (the larger way) over their timed calls' "
             "time, GB/s: the wire beside algbw and busbw")
        .add(coll_field::nic_errors, FieldRole::info,
             "NIC error counters that grew over the timed calls, by rank")
        .add(coll_field::rank_median_us, FieldRole::info,
             "--samples: each rank's median own time (iteration less waiting for the last "
             "arrival), us")
        .add(coll_field::samples_us, FieldRole::info,
             "--samples: every iteration's time, rank-major (rank r's i at r * iters + i), us")
        .add(coll_field::in_call_us, FieldRole::info,
             "--samples: time inside the library call, same layout, us")
        .headline(coll_field::busbw);
  }
  std::string name() const override { return "coll"; }
  std::string summary() const override {
    return "collective bandwidth (time, algbw, busbw, #wrong) like nccl-tests";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override { register_coll(r); }
  std::string table_note(const Report& r) const override {
    std::string agg = "max";
    if (const auto* a = find_field(r.params, "agg"); a && std::holds_alternative<std::string>(*a))
      agg = std::get<std::string>(*a);
    std::string note = fmt::format(
        "algbw = size / time, busbw = algbw x bus factor (nccl-tests), decimal GB/s; time in us: "
        "{}\n",
        agg == "rank0" ? std::string("rank 0's median iteration")
                       : "each rank's median iteration, " + agg + " over ranks");
    if (const auto* t = find_field(r.params, "timed_by");
        t && std::holds_alternative<std::string>(*t))
      note += "timed by: " + std::get<std::string>(*t) + "\n";
    return note;
  }
  std::string tables(const Report& r) const override { return coll_tables(r); }
  // The backend's collective library must take these ranks (NCCL and HCCL:
  // one device per rank), checked before any of its calls.
  Support fits(Backend& b, Runtime* rt) const override {
    return rt ? b.communicator_fits(*rt) : Support::yes();
  }

  void add_options(CLI::App& app) override {
    app.add_option("collective", collective_, collective_names() + "; comma list allowed")
        ->required();
    add_size_options(app, sizes_, "64K", "64M", "4");
    app.add_option("-c,--check", run_.check,
                   "check results: 1 or last (default: the last call), every (each timed call, "
                   "alone from a barrier: the wrong ones' rate and ranks), 0 or none")
        ->type_name("MODE")
        ->transform([](const std::string& v) {
          return v == "0" ? std::string("none") : v == "1" ? std::string("last") : v;
        })
        ->check(check_modes());
    app.add_option("-d,--dtype", dtypes_, dtype_names() + ", comma list or all")
        ->default_str("float");
    app.add_option("--redop", redops_, redop_names() + ", comma list or all (nccl-tests -o)")
        ->default_str("sum");
    app.add_option("-r,--root", cfg_.root, "root of broadcast, reduce, gather and scatter")
        ->default_str("0");
    app.add_option("--skew", skew_,
                   "alltoallv's per-pair counts: uniform, zipf:S (share of the k-th most popular "
                   "destination ~ 1/(k+1)^S) or hot:K:F (K destinations get a fraction F)")
        ->default_str("uniform");
    app.add_flag("--inplace", inplace_, "only in-place (default: both)");
    app.add_flag("--outofplace", outofplace_, "only out-of-place (default: both)");
    app.add_option("-a,--agg", agg_,
                   "time over ranks: max (default: each statistic's largest over the ranks), avg, "
                   "min, or rank0 (rank 0's own)")
        ->check(CLI::IsMember({"max", "avg", "min", "rank0"}))
        ->default_str("max");
    app.add_flag("--samples", cfg_.samples,
                 "keep every iteration's time of every rank in the records (JSON), with each "
                 "rank's median");
    app.add_flag("--rank-avg", rank_avg_, "same as -a avg");
    app.add_flag(
        "-G,--graph", cfg_.graph,
        "capture the timed iterations in a CUDA graph and replay it (NCCL; nccl-tests -G)");
    add_run_options(app, run_,
                    {.iters = "timed iterations (default 20)",
                     .warmup = "warm-up iterations (default 5)",
                     .check = "same as -c 0",
                     .check_every = true,
                     .ranks = true,
                     .monitor = true});
    app.footer(footer());
  }

  int run(const Invocation& inv) override {
    cfg_.ops = parse_collectives(collective_);  // bad names fail before MPI starts
    if (skew_) {
      cfg_.skew = parse_skew(*skew_);
      if (std::find(cfg_.ops.begin(), cfg_.ops.end(), CollOp::alltoallv) == cfg_.ops.end())
        throw UsageError(
            fmt::format("--skew {}: only alltoallv takes a skew, not {}", *skew_, collective_));
    }
    read_slow_rank();
    cfg_.dtypes = parse_dtypes(dtypes_);
    cfg_.redops = parse_redops(redops_);
    Ranked r =
        start_ranked(*this, run_, inv, [&](Runtime& rt, Backend&) { finish_config(rt.size()); });
    auto comm = r.backend->communicator(*r.rt);
    validate_coll(r.rt->size(), cfg_, comm.get());
    if (const std::string s = r.rt->agree(coll_memory_shortfall(*r.backend, *comm, cfg_));
        !s.empty())
      throw UsageError(s);
    Params params = this->params(r.rt->size());
    params.emplace_back(
        "timed_by",
        cfg_.check_every
            ? std::string("the host clock, each call alone from a barrier "
                          "(--check every checks it after)")
            : timed_by(*comm) + (cfg_.graph ? ", captured in a graph and replayed" : ""));
    r.begin(*this, "coll", params);
    CollResult res;
    res.records = run_cycles(run_, r.rt.get(), [&] {
      CollResult one = run_coll(*r.rt, *comm, *r.backend, cfg_);
      res.summary = std::move(one.summary);  // the last cycle's averages
      return std::move(one.records);
    });
    return r.report(*this,
                    {"coll", {}, std::move(params), std::move(res.records), std::move(res.summary)},
                    run_);
  }

 private:
  // Default sweep 64K..64M x4. Each collective rounds each size down to what
  // it can move at this rank count (coll_fit), and its records say so.
  std::vector<Bytes> default_sizes() const { return sizes_of(sizes_, 64 * 1024, 64ULL << 20, 4.0); }

  void finish_config(int nranks) {
    cfg_.sizes = default_sizes();
    cfg_.iters = run_.iters_or(20);
    cfg_.warmup = run_.warmup_or(5);
    const CheckMode mode = check_mode(run_);
    cfg_.check = mode != CheckMode::none;
    cfg_.check_every = mode == CheckMode::every;
    if (inplace_ || outofplace_) {
      cfg_.inplace = inplace_;
      cfg_.outofplace = outofplace_;
    }
    cfg_.agg = rank_avg_ || agg_ == "avg" ? TimeAgg::avg
               : agg_ == "min"            ? TimeAgg::min
               : agg_ == "rank0"          ? TimeAgg::rank0
                                          : TimeAgg::max;
    validate_coll(nranks, cfg_);
  }

  // Byte models and bus factors, from the table.
  static std::string footer() {
    std::string out = "Per collective: what a size means, and busbw = algbw x factor (n ranks):\n";
    for (const CollSpec& s : collectives()) {
      const double f4 = s.bus_factor(4);
      const char* factor = f4 == 1.5 ? "2(n-1)/n" : f4 == 1.0 ? "1" : "(n-1)/n";
      out += fmt::format("  {:<14} {:<9} {}\n", s.name, factor, s.help);
    }
    return out +
           R"(Size is the whole buffer: the gathered result (allgather, gather), the full input
(reducescatter, alltoall, scatter), each rank's send total (alltoallv), else the message.
Examples:
  mpiexec -n 4 xferbench coll allreduce -b 8 -e 128M -f 2
  mpiexec -n 3 xferbench coll alltoallv --skew zipf:1.2 -b 4K -e 4M
  mpiexec -n 4 xferbench coll gather,scatter -r 1 --samples --format json -o c.json
  xferbench coll all --ranks 2 -d float,bf16 --redop sum,max -c 1 --format json -o c.json)";
  }

  // Test only: XFERBENCH_TEST_SLOW_RANK=R:US slows rank R by US microseconds
  // before each timed call (tests of the slowest-rank line).
  void read_slow_rank() {
    const char* v = std::getenv("XFERBENCH_TEST_SLOW_RANK");
    if (!v || !*v) return;
    int rank = -1;
    double us = 0;
    char tail = 0;
    if (std::sscanf(v, "%d:%lf%c", &rank, &us, &tail) != 2 || rank < 0 || !(us > 0) || us > 1e7)
      throw UsageError(
          fmt::format("XFERBENCH_TEST_SLOW_RANK={}: expected RANK:MICROSECONDS (a test knob)", v));
    cfg_.slow_rank = rank;
    cfg_.slow_us = us;
  }

  Params params(int nranks) const {
    return {{"collective", collective_},
            {"dtypes", dtypes_},
            {"redops", redops_},
            {"sizes", join_numbers(cfg_.sizes)},
            {"iters", std::int64_t{cfg_.iters}},
            {"warmup", std::int64_t{cfg_.warmup}},
            {"check", cfg_.check},
            {"root", std::int64_t{cfg_.root}},
            {"inplace", cfg_.inplace},
            {"outofplace", cfg_.outofplace},
            {"agg", std::string(to_string(cfg_.agg))},
            {"skew", to_string(cfg_.skew)},
            {"samples", cfg_.samples},
            {"ranks", std::int64_t{nranks}}};
  }

  CollConfig cfg_;
  SizeArgs sizes_;
  RunOptions run_;
  std::string collective_, dtypes_ = "float", redops_ = "sum", agg_ = "max";
  std::optional<std::string> skew_;
  bool inplace_ = false, outofplace_ = false, rank_avg_ = false;
  RecordSchema schema_{"coll"};
};

}  // namespace

std::unique_ptr<Family> make_coll_family() { return std::make_unique<CollFamily>(); }

}  // namespace xb
