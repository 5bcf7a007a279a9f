// xferbench-skeleton: the skeleton family of docs/DESIGN.md behind the same
// command line and exit codes as xferbench's (cli/cli.cpp, cli/main.cpp),
// so docs.skeleton_runs can run it.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "backend/select/select.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "family/family.hpp"

namespace xb {
std::unique_ptr<Family> make_fill_family();
}

int main(int argc, char** argv) {
  int rc = 0;
  try {
    const std::unique_ptr<xb::Family> family = xb::make_fill_family();
    CLI::App app{"the skeleton family of docs/DESIGN.md", "xferbench-skeleton"};
    app.require_subcommand(1);
    CLI::App* sub = app.add_subcommand(family->name(), family->summary());
    family->add_options(*sub);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
    rc = family->run({argc, argv});
  } catch (const xb::Interrupted& e) {
    rc = 128 + e.signal();
  } catch (const xb::UsageError& e) {
    std::fprintf(stderr, "xferbench-skeleton: error: %s\n", e.what());
    rc = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xferbench-skeleton: error: %s\n", e.what());
    rc = 1;
  }
  xb::finish_backends();
  return rc;
}
