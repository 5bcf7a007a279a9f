// `xferbench latency`: options -> LatencyConfig, ranks, records -> report.
#include "family/latency/latency_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "family/cycles.hpp"
#include "family/latency/latency_bench.hpp"
#include "family/options.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"

namespace xb {
namespace {

class LatencyFamily final : public Family {
 public:
  LatencyFamily() {
    schema_.add(latency_field::sample, FieldRole::info, "what one sample's time is")
        .add(latency_field::link, FieldRole::info, "chase: how the chaser reaches the memory")
        .add(latency_field::chain_bytes, FieldRole::key, "chase: bytes of the chain")
        .add(latency_field::lines, FieldRole::info, "chase: cache lines in the chain (64 B)")
        .add(latency_field::loads, FieldRole::info, "chase: dependent loads per sample");
  }
  std::string name() const override { return "latency"; }
  std::string summary() const override {
    return "pointer-chase latency node/device to memory, ping-pong between ranks, percentiles";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override {
    r.add({"latency.chase", "latency",
           "dependent loads at 64 B stride over a chain well above the caches: memory of device "
           "b loaded by device a, every pair",
           [](const Capabilities& c) {
             if (c.backend == "host") return Support::yes();
             return Support::no(fmt::format(
                 "the {} backend has no pointer-chase kernel in this version", c.backend));
           }});
    r.add({"latency.pingpong", "latency",
           "ranks 0 and 1 bounce 8 B .. 64 KiB of host memory (MPI), one-way = round trip / 2",
           [](const Capabilities&) { return Support::yes(); }});
  }
  std::string table_note(const Report&) const override {
    return "p50/p99/max/min/mean over the timed samples. chase: a sample is one chase of N "
           "dependent loads / N (ns per load); pingpong: a sample is one round trip / 2 (one-way "
           "us, as osu_latency)\n";
  }
  std::string tables(const Report& r) const override { return latency_tables(r); }

  void add_options(CLI::App& app) override {
    app.add_option_function<std::string>(
           "-t,--type", [this](const std::string& s) { parse_types(s); },
           "comma list of chase, pingpong")
        ->default_str("chase,pingpong");
    app.add_option_function<std::string>(
           "--chain", [this](const std::string& s) { cfg_.chain = parse_size(s, "--chain size"); },
           "chase: bytes of the chain (default: 256 MiB or 4x the last-level cache, the larger)")
        ->type_name("SIZE");
    app.add_option("--loads", cfg_.loads, "chase: dependent loads per sample")
        ->check(CLI::Range(1, 1000000000))
        ->default_str("4096");
    add_size_options(app, sizes_, "8", "64K", "2");
    add_run_options(app, run_,
                    {.iters = "timed samples: chases (default 200), round trips per size "
                              "(default 10000 up to 8K, 1000 above)",
                     .warmup = "warm-up samples, discarded (default: chase 10, ping-pong n/10)",
                     .check = "skip verification (the chain visits every line; the ping-pong "
                              "messages arrive intact)",
                     .ranks = true,
                     .monitor = true});
    app.footer(
        R"(Chase: memory of device b is loaded by device a's cores, every pair (host backend: NUMA
nodes, memory bound to node b, one thread on node a's CPUs; XFERBENCH_HOST_DEVICES=N exposes N).
Ping-pong: rank 0 <-> rank 1 under mpiexec; with one rank its records are waived.
Sizes (-s, -b -e -f -i) are the ping-pong's; 4K = 4 KiB = 4096, 4KB = 4000.
Examples:
  xferbench latency                                 chase every node pair; ping-pong waived (1 rank)
  mpiexec -n 2 xferbench latency -t pingpong        8 B .. 64 KiB x2, one-way p50/p99/max
  XFERBENCH_HOST_DEVICES=2 xferbench latency -t chase --chain 1G -n 500
  xferbench latency --ranks 2 -b 8 -e 1K --format json -o lat.json)");
  }

  int run(const Invocation& inv) override {
    cfg_.sizes = sizes_of(sizes_, 8, 64 * 1024, 2.0);
    if (run_.iters > 0) cfg_.iters = run_.iters;
    if (run_.warmup >= 0) cfg_.warmup = run_.warmup;
    cfg_.check = !run_.no_check;
    Ranked r =
        start_ranked(*this, run_, inv, [&](Runtime& rt, Backend&) { validate_latency(rt, cfg_); });
    r.begin(*this, "latency", params());
    std::vector<Record> recs =
        run_cycles(run_, r.rt.get(), [&] { return run_latency(*r.rt, *r.backend, cfg_); });
    return r.report(*this, {"latency", {}, params(), std::move(recs), {}}, run_);
  }

 private:
  void parse_types(const std::string& s) {
    cfg_.chase = cfg_.pingpong = false;
    for (const auto& t : option_set("-t", s, "chase, pingpong or chase,pingpong")) {
      if (t == "chase")
        cfg_.chase = true;
      else if (t == "pingpong")
        cfg_.pingpong = true;
      else
        throw UsageError(fmt::format("-t: unknown latency type '{}' (chase, pingpong)", t));
    }
    if (!cfg_.chase && !cfg_.pingpong) throw UsageError("-t needs chase, pingpong or both");
  }

  Params params() const {
    std::string types = cfg_.chase ? "chase" : "";
    if (cfg_.pingpong) types += types.empty() ? "pingpong" : ",pingpong";
    return {{"type", types},
            {"chain", static_cast<std::int64_t>(cfg_.chain)},
            {"loads", std::int64_t{cfg_.loads}},
            {"sizes", join_numbers(cfg_.sizes)},
            {"iters", std::int64_t{cfg_.iters.value_or(0)}},
            {"warmup", std::int64_t{cfg_.warmup.value_or(-1)}},
            {"check", cfg_.check}};
  }

  LatencyConfig cfg_;
  SizeArgs sizes_;
  RunOptions run_;
  RecordSchema schema_{"latency"};
};

}  // namespace

std::unique_ptr<Family> make_latency_family() { return std::make_unique<LatencyFamily>(); }

}  // namespace xb
