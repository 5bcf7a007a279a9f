#include "cli/cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <xferbench/version.hpp>

#include "backend/cuda_module.hpp"
#include "core/error.hpp"
#include "family/output.hpp"
#include "runtime/runtime.hpp"

namespace xb::cli {

namespace {

constexpr const char* kFooter = R"(Examples:
  xferbench list                       backends, devices, benchmarks
  xferbench topo --format json         machine topology (hwloc)
  xferbench copy                       h2d, d2h, d2d on every device, 2 B..32 MiB, dma and core
  xferbench copy -t d2d -s 256M --threads 2 --format json -o d2d.json
  XFERBENCH_HOST_DEVICES=4 xferbench copy -t p2p --bidir
  xferbench copy -t all_to_host,host_to_all    every device at once: each device and the sum
  mpiexec -n 2 xferbench remote        get from a peer rank: core (staged) vs dma (engine)
  mpiexec -n 2 xferbench remote --window 64 -b 8 -e 4K    message rate
  mpiexec -n 2 xferbench latency       pointer chase between nodes, ping-pong p50/p99/max
  mpiexec -n 4 xferbench coll allreduce -b 8 -e 128M -f 2
  xferbench engine selftest            UCX transfer engine, server and client in one process
  mpiexec -n 3 xferbench kv            KV-cache block get/put among ranks
  mpiexec -n 2 xferbench gemm-ar       fused GEMM + AllReduce, overlap of compute and communication
  xferbench plot a.json -o a.png       charts; `report` for an HTML page, `compare` for a CI gate
  xferbench coll --fields              what each field of a command's records means

Ranks watch each other: one whose peer died, or sent nothing for XFERBENCH_PEER_TIMEOUT
seconds (default 30, 0: no watch), ends with an error naming that peer.

Exit codes: 0 ok, 1 a benchmark failed or a check mismatched, 2 bad usage.)";

// `<family> --fields`, thrown while parsing (as --help is), so a family's
// required options and subcommands need not be given to ask.
struct FieldsAsked {
  const Family* family;
};

// On the family's subcommand and its own (engine client --fields).
void add_fields_flag(CLI::App& sub, const Family& f) {
  sub.add_flag_callback(
         "--fields", [&f] { throw FieldsAsked{&f}; },
         "print the fields of this command's records (type, role, meaning) and exit")
      ->trigger_on_parse();
  for (CLI::App* nested : sub.get_subcommands([](CLI::App*) { return true; }))
    add_fields_flag(*nested, f);
}

// Values no option takes, whatever its own check: an empty one (`-s ""`
// would otherwise mean "not given") and a number that is not finite (NaN
// passes every range check: `--atol nan` made verification unable to
// fail). One line naming the option.
void check_values(const CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->count() == 0 || o->get_type_size() == 0) continue;  // flags take no value
    for (const std::string& v : o->results()) {
      const std::string name = !o->get_lnames().empty()   ? "--" + o->get_lnames()[0]
                               : !o->get_snames().empty() ? "-" + o->get_snames()[0]
                                                          : o->get_name();
      if (v.empty()) throw UsageError(fmt::format("{}: an empty value (see --help)", name));
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      const bool spelled =
          std::any_of(v.begin(), v.end(), [](unsigned char c) { return std::isalpha(c) != 0; });
      if (end == v.c_str() + v.size() && !std::isfinite(d) && spelled)  // nan, inf, 1e999
        throw UsageError(fmt::format("{}: '{}' is not a finite number", name, v));
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) check_values(*sub);
}

// Where CLI11 says only "A subcommand is required": the word that is not
// one, and the commands there are ("xferbench engine: unknown command
// 'foo' (serve, client, fanin, selftest)"). Empty when no word was given.
std::string not_a_command(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path = "xferbench";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const auto subs = at->get_subcommands([](CLI::App*) { return true; });
    const auto sub = std::find_if(subs.begin(), subs.end(),
                                  [&](const CLI::App* s) { return s->get_name() == word; });
    if (sub != subs.end()) {
      at = *sub;
      path += " " + word;
      continue;
    }
    if (at->get_require_subcommand_min() == 0) return {};
    std::string names;
    for (const CLI::App* s : subs) names += (names.empty() ? "" : ", ") + s->get_name();
    return fmt::format("{}: {} '{}' ({})", path,
                       word[0] == '-' ? "a command comes first, not" : "unknown command", word,
                       names);
  }
  return {};
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"xferbench: how fast data moves in accelerator systems", "xferbench"};
  app.set_version_flag("--version", [] {
    std::vector<std::string> launcher = launcher_command(1);
    launcher.back() = "N";
    std::string out = fmt::format("xferbench {} ({})", kVersion, kGitDescribe);
    for (const auto& [name, version] : software_versions())
      out += fmt::format("\n{}: {}", name, version);
    const CudaModuleLoad& cuda = cuda_module();
    out += fmt::format("\ncuda module: {}", cuda.module ? cuda.path : cuda.why);
    return out + fmt::format("\nlauncher: {}", fmt::join(launcher, " "));
  });
  app.require_subcommand(1);
  app.footer(kFooter);
  // A flag takes no value: `--quick=3` is refused, not read as --quick (every
  // command's options inherit this).
  app.option_defaults()->disable_flag_override();
  const Families families = all_families();
  std::vector<Command> cmds = {add_list(app, families), add_topo(app)};
  for (const auto& f : families) {
    CLI::App* sub = app.add_subcommand(f->name(), f->summary());
    f->add_options(*sub);
    add_fields_flag(*sub, *f);
    cmds.push_back({sub, [&f, argc, argv] { return f->run({argc, argv}); }});
  }
  for (auto add : {add_plot, add_report}) cmds.push_back(add(app));
  cmds.push_back(add_compare(app, families));
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
  } catch (const FieldsAsked& asked) {
    std::fputs(format_fields(asked.family->schema()).c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    if (msg.find("ubcommand is required") != std::string::npos)
      if (std::string word = not_a_command(app, argc, argv); !word.empty()) msg = word;
    if (msg.empty()) msg = "invalid command line";
    throw UsageError(msg + " (see xferbench --help)");
  }
  check_values(app);
  for (auto& c : cmds)
    if (c.app->parsed()) return c.run();
  throw UsageError("no command given (see xferbench --help)");
}

}  // namespace xb::cli
