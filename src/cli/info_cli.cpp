// `xferbench list` and `xferbench topo`.
#include <CLI/CLI.hpp>

#include "backend/host/host_topology.hpp"
#include "backend/select/select.hpp"
#include "cli/cli.hpp"
#include "family/options.hpp"
#include "family/output.hpp"

namespace xb::cli {
namespace {

std::vector<std::string> device_names(const Backend& b) {
  std::vector<std::string> out;
  for (const auto& d : b.devices()) out.push_back(d.name);
  return out;
}

}  // namespace

Command add_list(CLI::App& root, const Families& families) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* app = root.add_subcommand(
      "list",
      "backends, devices and benchmarks, and why something cannot run (--format json: "
      "each command's record fields too)");
  add_output_options(*app, *opts, false, false);
  app->footer(R"(Examples:
  xferbench list                          what the first available backend can run, and why not
  xferbench list --backend host           the host backend's devices (NUMA nodes) and benchmarks
  xferbench list --format json -o l.json  the same, with every command's record fields)");
  return {app, [opts, &families] {
            auto backend = make_backend(opts->backend);
            Output out(*opts);
            Registry registry;
            for (const auto& f : families) f->cases(registry);
            ListView view;
            for (const auto& f : families) view.schemas.push_back(f->schema());
            for (const auto& b : probe_backends())
              view.backends.push_back({b.name, b.available, b.reason, b.broken});
            view.selected = backend->name();
            view.device_names = device_names(*backend);
            const Capabilities caps = backend->capabilities();
            for (const auto& def : registry.all()) {
              const Support s = def.filter(caps);
              view.benchmarks.push_back({def.key, def.family, def.description, s.ok, s.reason});
            }
            const EnvInfo env = env_of(*backend);
            out.emit([&](Format f) { return format_list(view, env, f); });
            return 0;
          }};
}

Command add_topo(CLI::App& root) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* app = root.add_subcommand(
      "topo", "CPUs, NUMA nodes, caches, PCI devices, distance and link matrices");
  add_output_options(*app, *opts, false, false);
  app->footer(R"(Examples:
  xferbench topo                          the machine and the first available backend's links
  xferbench topo --backend cuda           GPU link matrix (NVLink, PCIe) and NUMA affinity
  xferbench topo --format json -o t.json)");
  return {app, [opts] {
            auto backend = make_backend(opts->backend);
            Output out(*opts);
            TopoView view;
            view.machine = read_host_topology();
            view.backend = backend->name();
            view.device_names = device_names(*backend);
            const int n = static_cast<int>(view.device_names.size());
            for (int a = 0; a < n; ++a)
              for (int b = 0; b < n; ++b) view.links.push_back(backend->link_type(a, b));
            const EnvInfo env = env_of(*backend);
            out.emit([&](Format f) { return format_topo(view, env, f); });
            return 0;
          }};
}

}  // namespace xb::cli
