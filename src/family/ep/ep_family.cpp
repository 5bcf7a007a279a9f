// `xferbench ep`: MoE dispatch and combine, options -> EpConfig -> records.
#include "family/ep/ep_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "core/error.hpp"
#include "family/coll/coll_bench.hpp"
#include "family/cycles.hpp"
#include "family/ep/ep_bench.hpp"
#include "family/options.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"

namespace xb {
namespace {

class EpFamily final : public Family {
 public:
  EpFamily() {
    schema_.add(ep_field::phase, FieldRole::key, "dispatch, combine, or roundtrip (both)")
        .add(ep_field::library, FieldRole::info, "the library that moved the bytes")
        .add(ep_field::tokens, FieldRole::key, "tokens per rank")
        .add(ep_field::hidden, FieldRole::key, "hidden size (elements per token)")
        .add(ep_field::topk, FieldRole::key, "experts each token selects")
        .add(ep_field::experts, FieldRole::key, "experts in all, spread evenly over the ranks")
        .add(ep_field::routing, FieldRole::key, "expert popularity: uniform, zipf:S, hot:K:F")
        .add(ep_field::dispatch_dtype, FieldRole::key, "fp8 (with per-128 scales) or bf16")
        .add(ep_field::fresh_us, FieldRole::metric,
             "fresh entry: from a barrier to completion, each rank's median, MAX over ranks, us")
        .add(ep_field::fresh_min_us, FieldRole::info, "the same, MIN over ranks, us")
        .add(ep_field::chained_us, FieldRole::metric,
             "chained period: round trips back to back without a barrier, each rank's median, "
             "median over ranks, us")
        .add(ep_field::chained_min_us, FieldRole::info, "the same, MIN over ranks, us")
        .add(ep_field::fresh_spread, FieldRole::info, "fresh MAX over MIN: the cross-rank spread")
        .add(ep_field::payload_gbps, FieldRole::metric,
             "payload bytes per rank (the mean) / fresh_us, GB/s")
        .add(ep_field::logical_gbps, FieldRole::info,
             "DeepEP's logical bytes per rank (selections x message, local included) / fresh_us, "
             "GB/s")
        .add(ep_field::payload_bytes, FieldRole::info, "bytes moved, all ranks, local included")
        .add(ep_field::local_bytes, FieldRole::info, "of which to the same rank")
        .add(ep_field::node_bytes, FieldRole::info, "of which to another rank of the same node")
        .add(ep_field::remote_bytes, FieldRole::info, "of which to another node")
        .add(ep_field::logical_bytes, FieldRole::info, "DeepEP's count, all ranks")
        .add(ep_field::recv_counts, FieldRole::info, "tokens each rank received in dispatch")
        .add(ep_field::expert_rows, FieldRole::info,
             "expert output rows each rank returned in combine (its experts' load)")
        .add(ep_field::imbalance, FieldRole::info,
             "the largest over the mean: of recv_counts (dispatch), expert_rows (combine), the "
             "larger of the two (roundtrip)")
        .add(ep_field::wrong, FieldRole::info,
             "elements that differ from the exact result, all ranks; -1 unchecked")
        .add(ep_field::trace_hash, FieldRole::info,
             "the routing trace's hash, the same on every rank (checked)")
        .add(coll_field::slowest_rank, FieldRole::info,
             "the rank with the largest median fresh entry (the one MAX names); absent when every "
             "rank's times tie")
        .add(coll_field::slowest_host, FieldRole::info, "the host of slowest_rank")
        .add(coll_field::rank_spread, FieldRole::info,
             "slowest rank's median fresh entry / the other ranks' median")
        .add(coll_field::slowest_share, FieldRole::info,
             "fraction of iterations in which slowest_rank was the slowest")
        .headline(ep_field::payload_gbps);
  }
  std::string name() const override { return "ep"; }
  std::string summary() const override {
    return "MoE expert-parallel dispatch and combine (fresh and chained, exact oracle)";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override { register_ep(r); }
  std::string table_note(const Report& r) const override { return ep_note(r); }
  std::string tables(const Report& r) const override { return ep_tables(r); }
  Support fits(Backend& b, Runtime* rt) const override {
    return rt ? b.communicator_fits(*rt) : Support::yes();
  }

  void add_options(CLI::App& app) override {
    app.add_option("--tokens", tokens_,
                   "tokens per rank: a comma list, or a ladder: decode (1..512), prefill "
                   "(1024..8192), all")
        ->default_str("decode");
    app.add_option("--hidden", cfg_.shape.hidden, "hidden size")
        ->check(CLI::Range(1, 1 << 16))
        ->default_str("7168");
    app.add_option("--topk", cfg_.shape.topk, "experts per token")
        ->check(CLI::Range(1, kEpMaxTopk))
        ->default_str("8");
    app.add_option("--experts", cfg_.shape.experts, "experts, spread evenly over the ranks")
        ->check(CLI::Range(1, 1 << 16))
        ->default_str("256");
    app.add_option("--routing", routing_,
                   "expert popularity: uniform, zipf:S (the k-th most popular expert ~ "
                   "1/(k+1)^S) or hot:K:F (K experts get a fraction F)")
        ->default_str("uniform");
    app.add_option("--seed", seed_, "the routing trace's seed (the same on every rank)")
        ->default_str("24301");
    app.add_option("--dispatch-dtype", dispatch_, "fp8 (per-128 fp32 scales, 16 B header) or bf16")
        ->default_str("fp8");
    app.add_option("--method", methods_,
                   "alltoallv (the backend's library), put (one-sided MPI puts into per-source "
                   "slots and a flag, host), or all")
        ->default_str("alltoallv");
    add_run_options(app, run_,
                    {.iters = "timed iterations per figure (default 20)",
                     .warmup = "warm-up round trips (default 3)",
                     .check = "skip the exact check",
                     .check_every = true,
                     .ranks = true,
                     .monitor = true});
    app.footer(R"(Dispatch sends each token once to every rank holding one of its experts; combine
returns each expert's output row to the token's rank, weighted and summed there. Every
step is checked exactly outside timing (#wrong; --check every: as many checked round trips
as timed ones, with the rate of wrong ones). The figures are defined under the table.
Examples:
  mpiexec -n 4 xferbench ep
  mpiexec -n 4 xferbench ep --routing zipf:1.2 --tokens 128
  xferbench ep --ranks 2 --tokens prefill --dispatch-dtype bf16 --method all
  mpiexec -n 8 xferbench ep --hidden 4096 --topk 8 --experts 128 --format json -o ep.json)");
  }

  int run(const Invocation& inv) override {
    cfg_.tokens = parse_token_ladder(tokens_);
    cfg_.shape.routing = parse_skew(routing_, "--routing");
    cfg_.shape.dispatch = parse_ep_dtype(dispatch_, "--dispatch-dtype");
    cfg_.methods = parse_ep_methods(methods_);
    cfg_.seed = seed_;
    if (const char* c = std::getenv("XFERBENCH_TEST_EP_CORRUPT"); c && *c) {
      cfg_.corrupt = c;
      if (cfg_.corrupt != "dispatch" && cfg_.corrupt != "combine")
        throw UsageError(fmt::format(
            "XFERBENCH_TEST_EP_CORRUPT={}: dispatch or combine (a test knob)", cfg_.corrupt));
    }
    cfg_.iters = run_.iters_or(20);
    cfg_.warmup = run_.warmup_or(3);
    const CheckMode mode = check_mode(run_);
    cfg_.check = mode != CheckMode::none;
    cfg_.check_every = mode == CheckMode::every;
    Ranked r = start_ranked(*this, run_, inv,
                            [&](Runtime& rt, Backend&) { validate_ep_config(rt.size(), cfg_); });
    auto comm = r.backend->communicator(*r.rt);
    if (const std::string s = r.rt->agree(ep_memory_shortfall(*r.backend, *comm, cfg_)); !s.empty())
      throw UsageError(s);
    Params params = this->params(r.rt->size());
    params.emplace_back("timed_by",
                        comm->on_stream()
                            ? std::string("fresh: host clock from a barrier; chained: device "
                                          "events between calls queued back to back")
                            : std::string("host clock"));
    r.begin(*this, "ep", params);
    std::vector<Record> recs =
        run_cycles(run_, r.rt.get(), [&] { return run_ep(*r.rt, *comm, *r.backend, cfg_); });
    return r.report(*this, {"ep", {}, std::move(params), std::move(recs), {}}, run_);
  }

 private:
  Params params(int nranks) const {
    return {{"tokens", join_numbers(cfg_.tokens)},
            {"hidden", std::int64_t{cfg_.shape.hidden}},
            {"topk", std::int64_t{cfg_.shape.topk}},
            {"experts", std::int64_t{cfg_.shape.experts}},
            {"routing", to_string(cfg_.shape.routing)},
            {"seed", static_cast<std::int64_t>(cfg_.seed)},
            {"dispatch_dtype", std::string(to_string(cfg_.shape.dispatch))},
            {"combine_dtype", std::string("bf16")},
            {"method", methods_},
            {"iters", std::int64_t{cfg_.iters}},
            {"warmup", std::int64_t{cfg_.warmup}},
            {"check", cfg_.check},
            {"ranks", std::int64_t{nranks}}};
  }

  EpConfig cfg_;
  RunOptions run_;
  std::string tokens_ = "decode", routing_ = "uniform", dispatch_ = "fp8", methods_ = "alltoallv";
  std::uint32_t seed_ = 24301;
  RecordSchema schema_{"ep"};
};

}  // namespace

std::unique_ptr<Family> make_ep_family() { return std::make_unique<EpFamily>(); }

}  // namespace xb
