// `xferbench copy`: options -> CopyConfig -> records -> report.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "bench/copy/copy_bench.hpp"
#include "cli/cli.hpp"
#include "core/error.hpp"

namespace xb::cli {
namespace {

struct CopyArgs {
  CommonOptions common;
  std::string types = "h2d,d2h,d2d";
  std::string method = "both";
  SizeArgs sizes;
  std::string tile = "64K", host_mem = "pinned";
  int device = -1, src = -1, dst = -1;
  int warmup = 5, iters = 0, threads = 0;
  bool bidir = false, no_check = false;
};

std::vector<CopyCase> parse_types(const std::string& s) {
  std::vector<CopyCase> out;
  for (const auto& t : split_list(s)) {
    CopyCase c;
    if (t == "h2d")
      c = CopyCase::h2d;
    else if (t == "d2h")
      c = CopyCase::d2h;
    else if (t == "d2d")
      c = CopyCase::d2d;
    else if (t == "p2p")
      c = CopyCase::p2p;
    else
      throw UsageError(fmt::format("-t: unknown copy type '{}' (h2d, d2h, d2d, p2p)", t));
    out.push_back(c);
  }
  if (out.empty()) throw UsageError("-t needs at least one of h2d, d2h, d2d, p2p");
  return out;
}

// Fixed mode (-s), explicit sweep (-b/-e/-f/-i), or ascend-dmi's defaults:
// step mode 2 B..32 MiB x2 with 5 iterations, p2p fixed 64 MiB with 20.
void resolve_sizes(const CopyArgs& a, CopyConfig& cfg) {
  cfg.sizes = sizes_of(a.sizes, 2, 32ULL << 20, 2.0);
  if (a.sizes.fixed()) {
    cfg.p2p_sizes = cfg.sizes;
    cfg.iters = cfg.p2p_iters = a.iters ? a.iters : 40;
    return;
  }
  cfg.iters = a.iters ? a.iters : 5;
  if (a.sizes.sweep_given()) {
    cfg.p2p_sizes = cfg.sizes;
    cfg.p2p_iters = cfg.iters;
  } else {
    cfg.p2p_sizes = {64ULL << 20};
    cfg.p2p_iters = a.iters ? a.iters : 20;
  }
}

CopyConfig to_config(const CopyArgs& a) {
  CopyConfig cfg;
  cfg.cases = parse_types(a.types);
  if (a.device >= 0) cfg.device = a.device;
  if (a.src >= 0 || a.dst >= 0) {
    if (a.src < 0 || a.dst < 0) throw UsageError("--src and --dst go together");
    cfg.src = a.src;
    cfg.dst = a.dst;
  }
  cfg.bidir = a.bidir;
  if (a.method == "both")
    cfg.methods = {Method::dma, Method::core};
  else if (a.method == "dma")
    cfg.methods = {Method::dma};
  else
    cfg.methods = {Method::core};
  resolve_sizes(a, cfg);
  cfg.warmup = a.warmup;
  cfg.check = !a.no_check;
  cfg.copier.threads = a.threads;
  cfg.copier.tile = parse_tile(a.tile);
  cfg.host_mem = a.host_mem == "pageable" ? MemKind::pageable : MemKind::pinned;
  return cfg;
}

Params params_of(const CopyArgs& a, const CopyConfig& c) {
  auto ints = [](const std::vector<Bytes>& v) {
    std::string s;
    for (Bytes b : v) s += (s.empty() ? "" : ",") + std::to_string(b);
    return s;
  };
  return {{"type", a.types},
          {"method", a.method},
          {"device", static_cast<std::int64_t>(a.device)},
          {"src", static_cast<std::int64_t>(a.src)},
          {"dst", static_cast<std::int64_t>(a.dst)},
          {"bidir", a.bidir},
          {"sizes", ints(c.sizes)},
          {"p2p_sizes", ints(c.p2p_sizes)},
          {"warmup", static_cast<std::int64_t>(c.warmup)},
          {"iters", static_cast<std::int64_t>(c.iters)},
          {"p2p_iters", static_cast<std::int64_t>(c.p2p_iters)},
          {"threads", static_cast<std::int64_t>(c.copier.threads)},
          {"tile", static_cast<std::int64_t>(c.copier.tile)},
          {"host_mem", a.host_mem},
          {"check", c.check}};
}

// Progress on stderr, only on a terminal, overwritten in place.
Progress progress_for(bool quiet) {
  if (quiet || !isatty(STDERR_FILENO)) return {};
  return [](std::size_t done, std::size_t total, const std::string& what) {
    if (done >= total) {
      std::fprintf(stderr, "\r\033[K");
    } else {
      std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", done + 1, total, what.c_str());
    }
    std::fflush(stderr);
  };
}

}  // namespace

Command add_copy(CLI::App& root) {
  auto args = std::make_shared<CopyArgs>();
  CLI::App* app =
      root.add_subcommand("copy", "h2d, d2h, d2d, p2p bandwidth by dma engine or by cores");
  auto& a = *args;
  app->add_option("-t,--type", a.types, "comma list of h2d, d2h, d2d, p2p")
      ->default_str("h2d,d2h,d2d");
  app->add_option("-d,--device", a.device, "only this device (h2d/d2h/d2d)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--src", a.src, "p2p source device (with --dst)")->check(CLI::NonNegativeNumber);
  app->add_option("--dst", a.dst, "p2p destination device (with --src)")
      ->check(CLI::NonNegativeNumber);
  app->add_flag("--bidir", a.bidir, "p2p: also both directions at once (each direction and total)");
  app->add_option("--method", a.method, "dma (copy engine), core (cores via staging tile), both")
      ->check(CLI::IsMember({"dma", "core", "both"}))
      ->default_str("both");
  add_size_options(*app, a.sizes, "2", "32M", "2");
  app->add_option("-w,--warmup", a.warmup, "warm-up iterations, discarded")
      ->check(CLI::Range(0, 100000))
      ->default_str("5");
  app->add_option("-n,--iters", a.iters, "timed iterations (default 5 sweep, 40 fixed, 20 p2p)")
      ->check(CLI::Range(1, 1000000));
  app->add_option("--threads", a.threads,
                  "host: cores/workers one copy is split over (default 1); "
                  "cuda: thread blocks of the core kernels (default 2 per SM)")
      ->check(CLI::Range(1, 65535));
  app->add_option("--tile", a.tile,
                  "staging tile of the core method (cuda: shared memory per block, 0 = direct "
                  "loads/stores)")
      ->type_name("SIZE")
      ->default_str("64K");
  app->add_option("--host-mem", a.host_mem, "host side of h2d/d2h: pinned or pageable")
      ->check(CLI::IsMember({"pinned", "pageable"}))
      ->default_str("pinned");
  app->add_flag("--no-check", a.no_check, "skip verification of the copied bytes");
  add_common(*app, a.common);
  app->footer(R"(Sizes: 4096, 4K = 4KiB = 4096, 4KB = 4000, M, G (KB/MB/GB are 1000-based).
GB/s counts the bytes moved once (like nvbandwidth), 1 GB/s = 1e9 B/s.
Examples:
  xferbench copy                                  default: h2d,d2h,d2d, 2 B..32 MiB x2, dma and core
  xferbench copy -t d2d -s 256M --threads 2 --format json -o d2d.json
  xferbench copy -t p2p --bidir                   N x N matrices (XFERBENCH_HOST_DEVICES=4 on one node)
  xferbench copy -t h2d -b 4K -e 64M -f 4 --method core -w 5 -n 20
  xferbench copy --backend cuda -s 1G --tile 0    GPU: copy engines vs direct SM copy kernels)");
  return {app, [args] {
            const CopyConfig cfg = to_config(*args);
            auto backend = make_backend(args->common.backend);
            validate_copy(*backend, cfg);
            Output out(args->common);
            Registry registry;
            register_copy(registry);
            Report report{"copy", env_of(*backend), params_of(*args, cfg), {}, {}};
            report.results = run_copy(*backend, registry, cfg, progress_for(args->common.quiet));
            out.emit([&](Format f) { return format_report(report, f); });
            return finish(report, args->common);
          }};
}

}  // namespace xb::cli
