#pragma once
// The command line: the root app, the families (each its own subcommand,
// with --fields) and the commands that are not families: list and topo
// about the machine, plot, report and compare on result files.
#include <functional>

#include "family/family.hpp"

namespace CLI {
class App;
}

namespace xb::cli {

// Every benchmark family, in the order --help lists them (cli/families.cpp:
// one registration line per family).
Families all_families();

// A command that is not a family: its CLI11 app and what runs when chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_list(CLI::App& root, const Families& families);
Command add_topo(CLI::App& root);
Command add_plot(CLI::App& root);
Command add_report(CLI::App& root);
Command add_compare(CLI::App& root, const Families& families);

// Parses and runs; returns the exit code. Throws UsageError/RuntimeError.
int run(int argc, char** argv);

}  // namespace xb::cli
