#include "cli/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <xferbench/version.hpp>

#include "core/error.hpp"
#include "core/sweep.hpp"
#include "core/sysinfo.hpp"

namespace xb::cli {

void add_common(CLI::App& app, CommonOptions& opts) {
  app.add_option("--backend", opts.backend, "host, cuda, ascend or auto (first available)")
      ->default_str("auto");
  app.add_option("--format", opts.format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->default_str("table");
  app.add_option("-o,--output", opts.output, "write the --format output to FILE")
      ->type_name("FILE");
  app.add_flag("-q,--quiet", opts.quiet, "no table on stdout when -o is given, no progress");
  app.add_option("--min-bw", opts.min_bw,
                 "exit 1 when a record's median GB/s (coll: busbw) is below this")
      ->check(CLI::NonNegativeNumber);
}

int finish(const Report& report, const CommonOptions& opts) {
  int rc = exit_code(report);
  if (opts.min_bw <= 0) return rc;
  int below = 0;
  std::string worst;
  double lowest = 1e300;
  for (const auto& r : report.results) {
    if (r.status != Status::ok) continue;
    double bw = r.gbps_median;
    for (const auto& [k, v] : r.extra)
      if (k == "busbw" && std::holds_alternative<double>(v)) bw = std::get<double>(v);
    if (bw >= opts.min_bw) continue;
    ++below;
    if (bw < lowest) {
      lowest = bw;
      worst = fmt::format("{} {} {} B", r.kase, r.method, r.bytes);
    }
  }
  if (below == 0) return rc;
  std::fprintf(stderr, "xferbench: %d record%s below --min-bw %g GB/s (lowest: %s at %.3f GB/s)\n",
               below, below == 1 ? "" : "s", opts.min_bw, worst.c_str(), lowest);
  return 1;
}

CommonOptions host_only(CommonOptions opts, const char* command) {
  if (opts.backend == "auto") opts.backend = "host";
  if (opts.backend != "host")
    throw UsageError(fmt::format("{} runs on the host backend only in this version (not {})",
                                 command, opts.backend));
  return opts;
}

Bytes parse_tile(const std::string& text) {
  return text == "0" ? 0 : parse_size(text, "--tile size");
}

EnvInfo env_of(const Backend& backend) {
  EnvInfo env;
  env.host = host_name();
  env.cpu = cpu_model();
  env.cores = online_cores();
  env.backend = backend.name();
  for (const auto& d : backend.devices()) env.devices.push_back({d.id, d.name, d.numa});
  return env;
}

struct Output::File {
  std::ofstream stream;
};

Output::Output(const CommonOptions& opts) : opts_(opts), format_(parse_format(opts.format)) {
  if (opts.output.empty()) return;
  file_ = std::make_unique<File>();
  file_->stream.open(opts.output, std::ios::out | std::ios::trunc);
  if (!file_->stream)
    throw UsageError(fmt::format("cannot write -o {}: {}", opts.output, std::strerror(errno)));
}

Output::~Output() = default;

void Output::emit(const std::function<std::string(Format)>& render) {
  if (!file_) {
    std::cout << render(format_) << std::flush;
    return;
  }
  file_->stream << render(format_);
  file_->stream.flush();
  if (!file_->stream) throw RuntimeError(fmt::format("writing {} failed", opts_.output));
  if (!opts_.quiet) std::cout << render(Format::table) << std::flush;
}

void add_size_options(CLI::App& app, SizeArgs& a, const std::string& default_min,
                      const std::string& default_max, const std::string& default_factor) {
  app.add_option("-s,--size", a.size, "fixed size, e.g. 256M")->type_name("SIZE");
  app.add_option("-b,--minbytes", a.min, "sweep start (default " + default_min + ")")
      ->type_name("SIZE");
  app.add_option("-e,--maxbytes", a.max, "sweep end (default " + default_max + ")")
      ->type_name("SIZE");
  app.add_option("-f,--stepfactor", a.factor, "sweep factor (default " + default_factor + ")")
      ->check(CLI::PositiveNumber);
  app.add_option("-i,--stepbytes", a.step, "sweep step instead of a factor")->type_name("SIZE");
}

std::vector<Bytes> sizes_of(const SizeArgs& a, Bytes default_min, Bytes default_max,
                            double default_factor) {
  if (a.fixed() && a.sweep_given()) throw UsageError("-s is exclusive with -b/-e/-f/-i");
  if (a.fixed()) return {parse_size(a.size, "-s size")};
  SweepSpec spec;
  spec.min = a.min.empty() ? default_min : parse_size(a.min, "-b size");
  spec.max = a.max.empty() ? default_max : parse_size(a.max, "-e size");
  spec.step = a.step.empty() ? 0 : parse_size(a.step, "-i step");
  spec.factor = spec.step ? a.factor : (a.factor != 0 ? a.factor : default_factor);
  return expand_sweep(spec);
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto comma = s.find(',', start);
    const auto item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Ranked start_ranked(const CommonOptions& opts, int ranks, int argc, char** argv,
                    const std::function<void(Runtime&)>& validate) {
  if (ranks > 0 && !launched_by_mpiexec()) reexec_under_mpiexec(ranks, argc, argv);
  Ranked r;
  r.backend = make_backend(opts.backend);
  r.rt = make_mpi_runtime();
  if (ranks > 0 && ranks != r.rt->size())
    throw UsageError(fmt::format("--ranks {} but mpiexec started {} ranks", ranks, r.rt->size()));
  validate(*r.rt);
  std::string err;
  if (r.rt->root()) {
    try {
      r.out = std::make_unique<Output>(opts);
    } catch (const UsageError& e) {
      err = e.what();
    }
  }
  err = r.rt->agree(err);
  if (!err.empty()) throw UsageError(err);
  return r;
}

int Ranked::report(Report r, const CommonOptions& opts) {
  r.env = env_of(*backend);
  r.env.ranks = rt->size();
  if (out) out->emit([&](Format f) { return format_report(r, f); });
  return finish(r, opts);
}

namespace {

constexpr const char* kFooter = R"(Examples:
  xferbench list                       backends, devices, benchmarks
  xferbench topo --format json         machine topology (hwloc)
  xferbench copy                       h2d, d2h, d2d on every device, 2 B..32 MiB, dma and core
  xferbench copy -t d2d -s 256M --threads 2 --format json -o d2d.json
  XFERBENCH_HOST_DEVICES=4 xferbench copy -t p2p --bidir
  mpiexec -n 2 xferbench remote        get from a peer rank: core (staged) vs dma (engine)
  mpiexec -n 4 xferbench coll allreduce -b 8 -e 128M -f 2
  xferbench engine selftest            UCX transfer engine, server and client in one process
  mpiexec -n 3 xferbench kv            KV-cache block get/put among ranks
  mpiexec -n 2 xferbench gemm-ar       fused GEMM + AllReduce, overlap of compute and communication
  xferbench plot a.json -o a.png       charts; `report` for an HTML page, `compare` for a CI gate

Exit codes: 0 ok, 1 a benchmark failed or a check mismatched, 2 bad usage.)";

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"xferbench: how fast data moves in accelerator systems", "xferbench"};
  app.set_version_flag("--version", fmt::format("xferbench {} ({})", kVersion, kGitDescribe));
  app.require_subcommand(1);
  app.footer(kFooter);
  std::vector<Command> cmds = {add_list(app),
                               add_topo(app),
                               add_copy(app),
                               add_remote(app, argc, argv),
                               add_coll(app, argc, argv),
                               add_engine(app),
                               add_kv(app, argc, argv),
                               add_plot(app),
                               add_report(app),
                               add_compare(app),
                               add_gemm_ar(app, argc, argv)};
  if (argc > 1 && argv[1][0] != '-') {  // CLI11 would only say "a subcommand is required"
    std::string names;
    bool known = false;
    for (const auto& c : cmds) {
      known = known || c.app->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + c.app->get_name();
    }
    if (!known)
      throw UsageError(fmt::format("unknown command '{}' (commands: {})", argv[1], names));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    if (msg.empty()) msg = "invalid command line";
    throw UsageError(msg + " (see xferbench --help)");
  }
  for (auto& c : cmds)
    if (c.app->parsed()) return c.run();
  throw UsageError("no command given (see xferbench --help)");
}

}  // namespace xb::cli
