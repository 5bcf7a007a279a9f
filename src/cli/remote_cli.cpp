// `xferbench remote`: options -> RemoteConfig, ranks, records -> report.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "bench/remote/remote_bench.hpp"
#include "cli/cli.hpp"
#include "core/error.hpp"

namespace xb::cli {
namespace {

struct RemoteArgs {
  CommonOptions common;
  SizeArgs sizes;
  std::string ops = "get", method = "both", transport, tile = "64K";
  int iters = 0, warmup = -1, root = 0, peer = -1, threads = 0, ranks = 0;
  bool no_check = false;
};

RemoteConfig to_config(const RemoteArgs& a) {
  RemoteConfig c;
  c.ops.clear();
  for (const auto& op : split_list(a.ops)) {
    if (op == "get")
      c.ops.push_back(RemoteOp::get);
    else if (op == "put")
      c.ops.push_back(RemoteOp::put);
    else
      throw UsageError(fmt::format("--op: unknown operation '{}' (get, put)", op));
  }
  if (c.ops.empty()) throw UsageError("--op needs get, put or both");
  if (a.method == "dma")
    c.methods = {Method::dma};
  else if (a.method == "core")
    c.methods = {Method::core};
  c.sizes = sizes_of(a.sizes, 4096, 4ULL << 20, 4.0);
  if (a.iters > 0) c.iters = a.iters;
  if (a.warmup >= 0) c.warmup = a.warmup;
  if (a.transport == "shm") c.transport = Transport::shm;
  if (a.transport == "rma") c.transport = Transport::rma;
  c.root = a.root;
  if (a.peer >= 0) c.peer = a.peer;
  c.check = !a.no_check;
  c.copier.threads = a.threads;
  c.copier.tile = parse_tile(a.tile);
  return c;
}

Params params_of(const RemoteArgs& a, const RemoteConfig& c) {
  std::string sizes;
  for (Bytes b : c.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(b);
  return {{"op", a.ops},
          {"method", a.method},
          {"sizes", sizes},
          {"iters", static_cast<std::int64_t>(c.iters.value_or(0))},
          {"warmup", static_cast<std::int64_t>(c.warmup.value_or(-1))},
          {"transport", a.transport.empty() ? std::string("auto") : a.transport},
          {"root", static_cast<std::int64_t>(c.root)},
          {"peer", static_cast<std::int64_t>(a.peer)},
          {"threads", static_cast<std::int64_t>(c.copier.threads)},
          {"tile", static_cast<std::int64_t>(c.copier.tile)},
          {"check", c.check}};
}

int run_remote_command(const RemoteArgs& a, int argc, char** argv) {
  const RemoteConfig cfg = to_config(a);
  Ranked r =
      start_ranked(a.common, a.ranks, argc, argv, [&](Runtime& rt) { validate_remote(rt, cfg); });
  RemoteResult res = run_remote(*r.rt, *r.backend, cfg);
  return r.report({"remote", {}, params_of(a, cfg), std::move(res.records), std::move(res.summary)},
                  a.common);
}

}  // namespace

Command add_remote(CLI::App& root, int argc, char** argv) {
  auto args = std::make_shared<RemoteArgs>();
  auto& a = *args;
  CLI::App* app = root.add_subcommand(
      "remote", "one rank gets/puts a peer rank's window: core (staged) vs dma (engine)");
  app->add_option("--op", a.ops, "comma list of get, put")->default_str("get");
  app->add_option("--method", a.method,
                  "core (own core via staging tile), dma (async engine), both")
      ->check(CLI::IsMember({"dma", "core", "both"}))
      ->default_str("both");
  add_size_options(*app, a.sizes, "4K", "4M", "4");
  app->add_option("-n,--iters", a.iters,
                  "timed transfers per size (default: scaled, 1000 at 4K .. 64 at 4M)")
      ->check(CLI::Range(1, 10000000));
  app->add_option("-w,--warmup", a.warmup, "warm-up transfers (default: iters/10)")
      ->check(CLI::Range(0, 1000000));
  app->add_option("--transport", a.transport,
                  "shm (one host, load/store) or rma (MPI one-sided); default shm on one host")
      ->check(CLI::IsMember({"shm", "rma"}));
  app->add_option("--root", a.root, "the rank that issues transfers")->default_str("0");
  app->add_option("--peer", a.peer, "the rank whose window is read/written (default root+1)");
  app->add_option("--tile", a.tile, "core: staging tile size (cuda: shared memory, 0 = direct)")
      ->type_name("SIZE")
      ->default_str("64K");
  app->add_option(
         "--threads", a.threads,
         "host: dma engine workers (default 1); cuda: core thread blocks (default 2 per SM)")
      ->check(CLI::Range(1, 65535));
  app->add_option("--ranks", a.ranks, "outside mpiexec: start N ranks under mpiexec")
      ->check(CLI::Range(1, 4096));
  app->add_flag("--no-check", a.no_check, "skip verification of the received bytes");
  add_common(*app, a.common);
  app->footer(R"(Ranks come from MPICH's mpiexec; rank 0 reports, the others stay silent.
Examples:
  mpiexec -n 2 xferbench remote                     get, 4K..4M x4, both methods
  xferbench remote --ranks 2 --op get,put -b 4K -e 64M -f 2 --format json -o r.json
  mpiexec -f hosts -n 2 xferbench remote --transport rma      two hosts)");
  return {app, [args, argc, argv] { return run_remote_command(*args, argc, argv); }};
}

}  // namespace xb::cli
