// `xferbench plot`, `report` and `compare`: work on result files.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/cli.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "report/compare.hpp"

extern char** environ;

namespace xb::cli {
namespace {

namespace fs = std::filesystem;

// The plotting script: XFERBENCH_PLOT_SCRIPT, next to an installed binary
// (../share/xferbench), or the source tree it was built from.
std::string plot_script() {
  if (const char* env = std::getenv("XFERBENCH_PLOT_SCRIPT")) return env;
  char self[PATH_MAX] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) > 0) {
    const fs::path p =
        fs::path(self).parent_path() / ".." / "share" / "xferbench" / "xferbench_plot.py";
    if (fs::exists(p)) return p.string();
  }
  return XFERBENCH_SOURCE_SCRIPTS "/xferbench_plot.py";
}

// The Pythons to try, in order: XFERBENCH_PYTHON alone when set; else
// Debian's python3 (which has Debian's python3-matplotlib), then every
// python3 on PATH (a pyenv or conda one may have its own matplotlib).
std::vector<std::string> pythons() {
  if (const char* env = std::getenv("XFERBENCH_PYTHON"); env && *env) return {env};
  std::vector<std::string> out{"/usr/bin/python3"};
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, colon - start);
    const std::string py = (dir.empty() ? std::string(".") : dir) + "/python3";
    if (access(py.c_str(), X_OK) == 0 && std::find(out.begin(), out.end(), py) == out.end())
      out.push_back(py);
    start = colon + 1;
  }
  return out;
}

// The script's exit code under `py`.
int spawn(const std::string& py, const std::string& script, std::vector<std::string> args) {
  args.insert(args.begin(), {py, script});
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, py.c_str(), nullptr, nullptr, argv.data(), environ) != 0)
    throw RuntimeError(fmt::format("cannot run {}", py));
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int run_script(const std::vector<std::string>& args) {
  const std::string script = plot_script();
  if (!fs::exists(script)) {
    if (std::getenv("XFERBENCH_PLOT_SCRIPT"))  // the user's setting names nothing: bad usage
      throw UsageError(fmt::format("XFERBENCH_PLOT_SCRIPT={}: no such file", script));
    throw RuntimeError(fmt::format("plot script not found at {}", script));
  }
  setenv("XFERBENCH_PLOT_CALLER", "xferbench", 1);  // the script leaves the message to us
  int rc = -1;
  std::string tried;
  for (const auto& py : pythons()) {  // exit 3: this Python has no matplotlib, try the next
    if (access(py.c_str(), X_OK) != 0) continue;
    tried += (tried.empty() ? "" : ", ") + py;
    rc = spawn(py, script, args);
    if (rc != 3) break;
  }
  if (rc == -1)
    throw UsageError(
        "no python3 found: install python3 and python3-matplotlib (apt-get install "
        "python3-matplotlib), or set XFERBENCH_PYTHON");
  if (rc == 3)
    throw UsageError(fmt::format(
        "xferbench plot needs matplotlib (none in {}): apt-get install python3-matplotlib, or "
        "set XFERBENCH_PYTHON to a Python that has it",
        tried));
  if (rc == 2) throw UsageError("the plot script refused its input (see the line above)");
  if (rc == 4) return 1;  // it could not write -o, and said so in one line
  if (rc != 0) throw RuntimeError(fmt::format("the plot script failed (exit {})", rc));
  return 0;
}

// -o is checked before anything is read or drawn, as every command's is
// (core/output_file.hpp), and may not name one of the inputs: the page or
// image would replace the results it was made from.
void check_output_of(const std::string& out, const std::vector<std::string>& inputs) {
  check_output(out);
  for (const auto& in : inputs)
    if (same_file(in, out))
      throw UsageError(
          fmt::format("-o {} is the input {}: it would be overwritten (name another "
                      "file)",
                      out, in));
}

// The plot script reads JSON documents: a jsonl or CSV result is handed to
// it as the JSON document it reads as, under the same name in a temporary
// folder (removed when the command ends).
class AsJson {
 public:
  std::string path_for(const std::string& file) {
    const std::string text = load_result_text(file);  // bad input: one line, exit 2
    std::ifstream in(file);
    if (in.peek() == '{' && !is_jsonl_file(file)) return file;  // JSON: as it is
    if (dir_.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "xferbench-plot-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) throw RuntimeError("cannot make a temporary folder");
      dir_ = tmpl;
    }
    std::string out = (fs::path(dir_) / (fs::path(file).stem().string() + ".json")).string();
    std::ofstream(out) << text;
    return out;
  }
  ~AsJson() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

 private:
  std::string dir_;
};

}  // namespace

Command add_plot(CLI::App& root) {
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  CLI::App* app = root.add_subcommand("plot", "chart a result file (PNG or SVG, matplotlib)");
  app->add_option("file", *in, "result file (--format json, jsonl or csv output)")->required();
  app->add_option("-o,--output", *out, "image to write (.png or .svg)")->required();
  app->footer(
      "Example:\n  xferbench copy --format json -o a.json && xferbench plot a.json -o a.png");
  return {app, [in, out] {
            AsJson conv;
            const std::string file = conv.path_for(*in);  // bad input: exit 2, before Python
            const std::string ext = fs::path(*out).extension().string();
            if (ext != ".png" && ext != ".svg") throw UsageError("-o must end in .png or .svg");
            check_output_of(*out, {*in});
            return run_script({"plot", file, *out});
          }};
}

Command add_report(CLI::App& root) {
  auto in = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  CLI::App* app =
      root.add_subcommand("report", "one self-contained HTML page: charts, environment, tables");
  app->add_option("files", *in, "result files")->required();
  app->add_option("-o,--output", *out, "HTML file to write")->required();
  app->footer("Example:\n  xferbench report a.json r.json c.json -o report.html");
  return {app, [in, out] {
            AsJson conv;
            std::vector<std::string> args{"report", *out};
            for (const auto& f : *in) args.push_back(conv.path_for(f));  // bad input: exit 2
            check_output_of(*out, *in);
            return run_script(args);
          }};
}

Command add_compare(CLI::App& root, const Families& families) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto threshold = std::make_shared<std::string>("5%");
  CLI::App* app =
      root.add_subcommand("compare", "regression check between two result files (exit 1 on one)");
  app->add_option("files", *files, "BASE.json NEW.json")->required()->expected(2);
  app->add_option("--threshold", *threshold, "drop that counts as a regression (5% or 0.05)")
      ->default_str("5%");
  std::string keys;
  for (const auto& f : families) {
    std::string k;
    for (const auto& name : f->schema().keys()) k += (k.empty() ? "" : ", ") + name;
    keys += fmt::format("\n  {:<8} {}; metric {}", f->name(), k.empty() ? "-" : k,
                        f->schema().headline_name() == "gbps" ? std::string("median GB/s")
                                                              : f->schema().headline_name());
  }
  app->footer(
      "Records match by command, case, method, src, dst, bytes and their family's key fields:" +
      keys + "\nExample:\n  xferbench compare base.json new.json --threshold 5%");
  return {app, [files, threshold, &families] {
            const double t = parse_threshold(*threshold);
            const Comparison c =
                compare_results((*files)[0], (*files)[1], t, [&](const std::string& command) {
                  const Family* f = find_family(families, command);
                  return f ? &f->schema() : nullptr;
                });
            std::cout << format_comparison(c, t) << std::flush;
            return c.regressions > 0 ? 1 : 0;
          }};
}

}  // namespace xb::cli
