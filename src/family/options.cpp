#include "family/options.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/sweep.hpp"
#include "core/sysinfo.hpp"

namespace xb {

CLI::Option* number_in(CLI::Option* o, double lo, double hi, bool above, std::string want) {
  if (want.empty())
    want = hi == std::numeric_limits<double>::infinity()
               ? fmt::format("a number {} {:g}", above ? ">" : ">=", lo)
               : fmt::format("a number from {:g}{} to {:g}", lo, above ? " (excluded)" : "", hi);
  return o->check(CLI::Validator(
      [lo, hi, above, want](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
          return fmt::format("'{}' is not a finite number: give {}", text, want);
        if (v < lo || v > hi || (above && v == lo))
          return fmt::format("{} is out of range: give {}", text, want);
        return {};
      },
      want));
}

CLI::Validator check_modes() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_check_mode(text, "");
        } catch (const UsageError&) {
          return fmt::format(
              "'{}' is not a check mode: give every (each timed iteration), last or none", text);
        }
        return {};
      },
      "every|last|none");
}

CLI::Option* positive_seconds(CLI::Option* o) {
  return number_in(o, 0, 3.2e7, true, "seconds > 0 (at most a year)");
}

void add_output_options(CLI::App& app, RunOptions& opts, bool prom, bool records) {
  app.add_option(
         "--backend", opts.backend,
         "host, cuda, ascend, or auto: the first available that can run the command as asked")
      ->default_str("auto");
  std::vector<std::string> formats{"table", "json"};
  if (records) formats.insert(formats.end(), {"csv", "jsonl"});
  if (prom) formats.emplace_back("prom");
  app.add_option("--format", opts.format,
                 !records ? "table or json (csv and jsonl are for commands that write records)"
                 : prom   ? "table, json, csv, jsonl, or prom (Prometheus text, for "
                            "node_exporter's textfile collector)"
                        : "table, json, csv or jsonl (a line per record, written as each finishes)")
      ->check(CLI::IsMember(formats))
      ->default_str("table");
  app.add_option("-o,--output", opts.output,
                 "write the --format output to FILE ({host} in it becomes this host's name: one "
                 "file per node under srun or mpirun)")
      ->type_name("FILE")
      ->transform([](std::string path) {
        for (std::size_t at; (at = path.find("{host}")) != std::string::npos;)
          path.replace(at, 6, host_name());
        return path;
      });
  app.add_flag("-q,--quiet", opts.quiet, "no table on stdout when -o is given, no progress");
}

void add_run_options(CLI::App& app, RunOptions& opts, const OfferedOptions& offered) {
  if (!offered.iters.empty())
    app.add_option(offered.iters_name, opts.iters, offered.iters)->check(CLI::Range(1, 10000000));
  if (!offered.warmup.empty())
    app.add_option("-w,--warmup", opts.warmup, offered.warmup)->check(CLI::Range(0, 1000000));
  if (!offered.check.empty()) {
    auto* no = app.add_flag("--no-check", opts.no_check, offered.check);
    if (offered.check_every) {
      // A family with its own spelling (coll's nccl-tests -c) declares it first.
      auto* mode = app.get_option_no_throw("--check");
      if (!mode)
        mode = app.add_option("--check", opts.check,
                              "every: check each timed iteration outside its timing, with a "
                              "fresh pattern, and report the wrong ones' rate; last (default): "
                              "the last; none: as --no-check")
                   ->type_name("MODE")
                   ->check(check_modes());
      auto* its = app.add_option("--check-iters", opts.check_iters,
                                 "as --check every -n N: N iterations, each checked (a soak; "
                                 "nccl-tests' -c N)")
                      ->check(CLI::Range(1, 10000000));
      no->excludes(mode)->excludes(its);
      mode->excludes(its);
      if (auto* n = app.get_option_no_throw(offered.iters_name.substr(0, 2))) n->excludes(its);
    }
  }
  if (offered.ranks)
    app.add_option("--ranks", opts.ranks,
                   "outside a launcher: start N ranks under the launcher of the MPI it is built "
                   "with (mpiexec or mpirun; XFERBENCH_MPIEXEC names another)")
        ->check(CLI::Range(1, 4096));
  if (offered.monitor) {
    auto* d = app.add_option(
                     "--duration", opts.duration,
                     "repeat the measurement for this long (30s, 10m, 2h): " + offered.cycle_gives)
                  ->type_name("TIME");
    auto* c =
        app.add_option("--cycles", opts.cycles, "repeat the measurement N times (0: until Ctrl-C)")
            ->check(CLI::Range(0, 100000000));
    d->excludes(c);
  }
  add_output_options(app, opts, offered.prom);
  app.add_option("--min-bw", opts.min_bw,
                 "exit 1 when a record's headline figure (GB/s; coll: busbw) is below this")
      ->type_name("GBPS");
  number_in(app.get_option("--min-bw"), 0, std::numeric_limits<double>::infinity());
}

CheckMode check_mode(const RunOptions& opts) {
  if (opts.no_check) return CheckMode::none;
  if (opts.check_iters > 0) return CheckMode::every;
  return opts.check.empty() ? CheckMode::last : parse_check_mode(opts.check, "--check");
}

RunOptions host_only(RunOptions opts, const std::string& family) {
  if (opts.backend == "auto") opts.backend = "host";
  if (opts.backend != "host")
    throw UsageError(fmt::format("{} runs on the host backend only in this version (not {})",
                                 family, opts.backend));
  return opts;
}

void add_size_options(CLI::App& app, SizeArgs& a, const std::string& default_min,
                      const std::string& default_max, const std::string& default_factor) {
  app.add_option("-s,--size", a.size, "fixed size, e.g. 256M")->type_name("SIZE");
  app.add_option("-b,--minbytes", a.min, "sweep start (default " + default_min + ")")
      ->type_name("SIZE");
  app.add_option("-e,--maxbytes", a.max, "sweep end (default " + default_max + ")")
      ->type_name("SIZE");
  number_in(
      app.add_option("-f,--stepfactor", a.factor, "sweep factor (default " + default_factor + ")"),
      0, std::numeric_limits<double>::infinity(), true);
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

}  // namespace xb
