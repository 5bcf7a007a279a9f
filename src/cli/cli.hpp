#pragma once
// The command line: CLI11 fills one config value per subcommand (no
// globals); each command builds its records and hands them to report/.
#include <functional>
#include <string>

#include "backend/backend.hpp"
#include "core/record.hpp"
#include "report/report.hpp"
#include "runtime/runtime.hpp"

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
  double min_bw = 0;  // --min-bw GBPS, 0: off
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

// -s / -b -e -f -i, shared by every command that sweeps sizes.
struct SizeArgs {
  std::string size, min, max, step;
  double factor = 0;
  bool fixed() const { return !size.empty(); }
  bool sweep_given() const { return !min.empty() || !max.empty() || factor != 0 || !step.empty(); }
};
void add_size_options(CLI::App& app, SizeArgs& a, const std::string& default_min,
                      const std::string& default_max, const std::string& default_factor);
// Commands that move host memory only (kv, engine, gemm-ar): `auto` means
// host; another backend is a UsageError naming the command.
CommonOptions host_only(CommonOptions opts, const char* command);

// --tile: a size, or 0 (direct copies, no staging tile, on GPU backends).
Bytes parse_tile(const std::string& text);

// The sizes asked for, or the default sweep MIN..MAX by FACTOR. Throws
// UsageError for malformed sizes or -s mixed with a sweep.
std::vector<Bytes> sizes_of(const SizeArgs& a, Bytes default_min, Bytes default_max,
                            double default_factor);
std::vector<std::string> split_list(const std::string& s);

// The set-up every multi-rank command shares: --ranks re-executes under
// mpiexec, MPI starts, the rank count is checked, `validate` runs on every
// rank, and -o is opened on rank 0 (a bad path fails on every rank alike).
struct Ranked {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Runtime> rt;
  std::unique_ptr<Output> out;  // rank 0 only
  // Fills the environment, prints from rank 0 only, returns the exit code.
  int report(Report r, const CommonOptions& opts);
};
Ranked start_ranked(const CommonOptions& opts, int ranks, int argc, char** argv,
                    const std::function<void(Runtime&)>& validate);

// A subcommand: its CLI11 app and what runs when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_copy(CLI::App& root);
Command add_list(CLI::App& root);
Command add_topo(CLI::App& root);
Command add_remote(CLI::App& root, int argc, char** argv);
Command add_coll(CLI::App& root, int argc, char** argv);
Command add_engine(CLI::App& root);
Command add_kv(CLI::App& root, int argc, char** argv);
Command add_gemm_ar(CLI::App& root, int argc, char** argv);
Command add_plot(CLI::App& root);
Command add_report(CLI::App& root);
Command add_compare(CLI::App& root);

// The exit code of a measured report: 1 when a record failed or, with
// --min-bw, when an ok record's bandwidth (busbw for coll) is below it.
int finish(const Report& report, const CommonOptions& opts);

// Parses and runs; returns the exit code. Throws UsageError/RuntimeError.
int run(int argc, char** argv);

}  // namespace xb::cli
