#pragma once
// The command line: CLI11 fills one config value per subcommand (no
// globals); each command builds its records and hands them to report/.
#include <functional>
#include <string>

#include "backend/backend.hpp"
#include "core/record.hpp"
#include "report/report.hpp"

namespace CLI {
class App;
}

namespace xb::cli {

// Options every command shares.
struct CommonOptions {
  std::string backend = "auto";
  std::string format = "table";
  std::string output;  // -o FILE
  bool quiet = false;
};

void add_common(CLI::App& app, CommonOptions& opts);
EnvInfo env_of(const Backend& backend);

// Writes `render(format)` to -o FILE (the table also goes to stdout unless
// --quiet) or to stdout. The file is opened before anything runs, so a bad
// path is a usage error, not lost results.
class Output {
 public:
  explicit Output(const CommonOptions& opts);
  ~Output();
  void emit(const std::function<std::string(Format)>& render);
  Format format() const { return format_; }

 private:
  struct File;
  const CommonOptions& opts_;
  Format format_;
  std::unique_ptr<File> file_;
};

// A subcommand: its CLI11 app and what runs when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_copy(CLI::App& root);
Command add_list(CLI::App& root);
Command add_topo(CLI::App& root);

// Parses and runs; returns the exit code. Throws UsageError/RuntimeError.
int run(int argc, char** argv);

}  // namespace xb::cli
