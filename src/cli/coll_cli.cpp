// `xferbench coll`: nccl-tests options -> CollConfig -> records -> report.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "bench/coll/coll_bench.hpp"
#include "cli/cli.hpp"
#include "core/error.hpp"

namespace xb::cli {
namespace {

struct CollArgs {
  CommonOptions common;
  SizeArgs sizes;
  std::string collective, dtypes = "float", redops = "sum", agg = "max";
  int iters = 20, warmup = 5, check = 1, root = 0, ranks = 0;
  bool inplace = false, outofplace = false, rank_avg = false;
};

// Default sweep 64K..64M x4, rounded down so every split collective divides
// (explicit sizes are taken as given and checked).
std::vector<Bytes> default_sizes(const CollArgs& a, int nranks) {
  auto sizes = sizes_of(a.sizes, 64 * 1024, 64ULL << 20, 4.0);
  if (a.sizes.fixed() || a.sizes.sweep_given()) return sizes;
  const Bytes unit = 8ULL * static_cast<Bytes>(nranks);
  std::vector<Bytes> out;
  for (Bytes n : sizes)
    if (n / unit * unit > 0 && (out.empty() || out.back() != n / unit * unit))
      out.push_back(n / unit * unit);
  return out;
}

CollConfig to_config(const CollArgs& a, int nranks) {
  CollConfig c;
  c.ops = parse_collectives(a.collective);
  c.dtypes = parse_dtypes(a.dtypes);
  c.redops = parse_redops(a.redops);
  c.sizes = default_sizes(a, nranks);
  c.iters = a.iters;
  c.warmup = a.warmup;
  c.check = a.check != 0;
  c.root = a.root;
  if (a.inplace || a.outofplace) {
    c.inplace = a.inplace;
    c.outofplace = a.outofplace;
  }
  c.agg = a.rank_avg || a.agg == "avg" ? TimeAgg::avg
          : a.agg == "min"             ? TimeAgg::min
                                       : TimeAgg::max;
  validate_coll(nranks, c);
  return c;
}

Params params_of(const CollArgs& a, const CollConfig& c, int nranks) {
  std::string sizes;
  for (Bytes b : c.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(b);
  return {{"collective", a.collective},
          {"dtypes", a.dtypes},
          {"redops", a.redops},
          {"sizes", sizes},
          {"iters", static_cast<std::int64_t>(c.iters)},
          {"warmup", static_cast<std::int64_t>(c.warmup)},
          {"check", c.check},
          {"root", static_cast<std::int64_t>(c.root)},
          {"inplace", c.inplace},
          {"outofplace", c.outofplace},
          {"agg", std::string(to_string(c.agg))},
          {"ranks", static_cast<std::int64_t>(nranks)}};
}

int run_coll_command(const CollArgs& a, int argc, char** argv) {
  parse_collectives(a.collective);  // bad names fail before MPI starts
  parse_dtypes(a.dtypes);
  parse_redops(a.redops);
  CollConfig cfg;
  Ranked r = start_ranked(a.common, a.ranks, argc, argv,
                          [&](Runtime& rt) { cfg = to_config(a, rt.size()); });
  auto comm = make_communicator(*r.rt, *r.backend);
  CollResult res = run_coll(*r.rt, *comm, *r.backend, cfg);
  return r.report(
      {"coll", {}, params_of(a, cfg, r.rt->size()), std::move(res.records), std::move(res.summary)},
      a.common);
}

}  // namespace

Command add_coll(CLI::App& root, int argc, char** argv) {
  auto args = std::make_shared<CollArgs>();
  auto& a = *args;
  CLI::App* app = root.add_subcommand(
      "coll", "collective bandwidth (time, algbw, busbw, #wrong) like nccl-tests");
  app->add_option(
         "collective", a.collective,
         "allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv, or all")
      ->required();
  add_size_options(*app, a.sizes, "64K", "64M", "4");
  app->add_option("-n,--iters", a.iters, "timed iterations")
      ->check(CLI::Range(1, 1000000))
      ->default_str("20");
  app->add_option("-w,--warmup", a.warmup, "warm-up iterations")
      ->check(CLI::Range(0, 1000000))
      ->default_str("5");
  app->add_option("-c,--check", a.check, "check results: 1 (default) or 0")
      ->check(CLI::Range(0, 1));
  app->add_option("-d,--dtype", a.dtypes,
                  "int8, uint8, int32, int64, half, bf16, float, double, comma list or all")
      ->default_str("float");
  app->add_option("--redop", a.redops,
                  "sum, prod, min, max, avg, comma list or all (nccl-tests -o)")
      ->default_str("sum");
  app->add_option("-r,--root", a.root, "root of broadcast and reduce")->default_str("0");
  app->add_flag("--inplace", a.inplace, "only in-place (default: both)");
  app->add_flag("--outofplace", a.outofplace, "only out-of-place (default: both)");
  app->add_option("-a,--agg", a.agg, "time over ranks: max, avg or min")
      ->check(CLI::IsMember({"max", "avg", "min"}))
      ->default_str("max");
  app->add_flag("--rank-avg", a.rank_avg, "same as -a avg");
  app->add_option("--ranks", a.ranks, "outside mpiexec: start N ranks under mpiexec")
      ->check(CLI::Range(1, 4096));
  add_common(*app, a.common);
  app->footer(
      R"(busbw = algbw x factor: allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n;
broadcast, reduce, sendrecv 1 (nccl-tests). Size is the whole buffer: allgather's result,
reducescatter's and alltoall's input.
Examples:
  mpiexec -n 4 xferbench coll allreduce -b 8 -e 128M -f 2
  xferbench coll all --ranks 2 -d float,bf16 --redop sum,max -c 1 --format json -o c.json)");
  return {app, [args, argc, argv] { return run_coll_command(*args, argc, argv); }};
}

}  // namespace xb::cli
