// `xferbench kv`: KV-cache block put/get among ranks.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "bench/kv/kv_bench.hpp"
#include "cli/cli.hpp"
#include "core/error.hpp"

namespace xb::cli {
namespace {

struct KvArgs {
  CommonOptions common;
  std::string block_bytes, blocks = "16,32,48,64";
  int iters = 5, warmup = 1, ranks = 0;
  bool no_check = false;
};

KvConfig to_config(const KvArgs& a) {
  KvConfig c;
  if (!a.block_bytes.empty()) c.block_bytes = parse_size(a.block_bytes, "--block-bytes");
  c.blocks.clear();
  for (const auto& b : split_list(a.blocks)) {
    int v = 0;
    try {
      std::size_t used = 0;
      v = std::stoi(b, &used);
      if (used != b.size()) v = 0;
    } catch (const std::exception&) {
      v = 0;
    }
    if (v < 1 || v > 100000)
      throw UsageError(fmt::format("--blocks: '{}' is not a positive block count", b));
    c.blocks.push_back(v);
  }
  c.iters = a.iters;
  c.warmup = a.warmup;
  c.check = !a.no_check;
  return c;
}

int run_kv_command(const KvArgs& a, int argc, char** argv) {
  const KvConfig cfg = to_config(a);
  const CommonOptions common = host_only(a.common, "kv");  // outlives the Output of `r`
  Ranked r = start_ranked(common, a.ranks, argc, argv, [&](Runtime& rt) { validate_kv(rt, cfg); });
  std::vector<Record> recs = run_kv(*r.rt, cfg);
  const Params params = {{"block_bytes", static_cast<std::int64_t>(cfg.block_bytes)},
                         {"blocks", a.blocks},
                         {"iters", static_cast<std::int64_t>(cfg.iters)},
                         {"warmup", static_cast<std::int64_t>(cfg.warmup)},
                         {"check", cfg.check}};
  return r.report({"kv", {}, params, std::move(recs), {}}, common);
}

}  // namespace

Command add_kv(CLI::App& root, int argc, char** argv) {
  auto args = std::make_shared<KvArgs>();
  auto& a = *args;
  CLI::App* app =
      root.add_subcommand("kv", "KV-cache block put/get among ranks over the UCX engine");
  app->add_option("--block-bytes", a.block_bytes,
                  "bytes per KV block (default 61 x (128K + 16K) = 8784 KiB)")
      ->type_name("SIZE");
  app->add_option("--blocks", a.blocks, "blocks per round, comma list")->default_str("16,32,48,64");
  app->add_option("-n,--iters", a.iters, "timed rounds")
      ->check(CLI::Range(1, 100000))
      ->default_str("5");
  app->add_option("-w,--warmup", a.warmup, "warm-up rounds")
      ->check(CLI::Range(0, 100000))
      ->default_str("1");
  app->add_option("--ranks", a.ranks, "outside mpiexec: start N ranks under mpiexec")
      ->check(CLI::Range(1, 4096));
  app->add_flag("--no-check", a.no_check, "skip verification");
  add_common(*app, a.common);
  app->footer(
      R"(Get: every rank reads its blocks from the other ranks (spread round-robin); Put: rank 0
writes the blocks to every peer. GB/s = bytes of the round / round time (per rank for get).
Examples:
  mpiexec -n 4 xferbench kv
  xferbench kv --ranks 3 --block-bytes 1M --blocks 8,16 --format json -o kv.json)");
  return {app, [args, argc, argv] { return run_kv_command(*args, argc, argv); }};
}

}  // namespace xb::cli
