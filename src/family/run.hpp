#pragma once
// What every family's command shares: one set of run options (each declared
// here once, with one range), the output file, size sweeps, the multi-rank
// set-up and the exit code of a measured report.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/select/select.hpp"
#include "core/sweep.hpp"
#include "family/family.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// The run options. Each family declares the ones it takes (RunOpts), with
// its own defaults in the help text; a value left unset keeps the family's
// default (iters 0, warmup -1).
struct RunOptions {
  std::string backend = "auto";
  std::string format = "table";
  std::string output;  // -o FILE
  bool quiet = false;
  double min_bw = 0;  // --min-bw GBPS, 0: off
  int iters = 0;      // -n: 0 = the family's default
  int warmup = -1;    // -w: -1 = the family's default
  bool no_check = false;
  int ranks = 0;         // --ranks: 0 = as launched
  std::string duration;  // --duration: repeat for this long ("10m")
  int cycles = -1;       // --cycles: repeat this many times, 0 until stopped; -1 not given

  int iters_or(int dflt) const { return iters > 0 ? iters : dflt; }
  int warmup_or(int dflt) const { return warmup >= 0 ? warmup : dflt; }
};

// Which of the per-run options a family takes, and their help text.
struct RunOpts {
  std::string iters;  // "-n" help, e.g. "timed iterations (default 20)"; empty: no -n
  std::string iters_name = "-n,--iters";  // engine counts loops: "-n,--loops"
  std::string warmup;                     // "-w" help; empty: no -w
  std::string check;                      // "--no-check" help; empty: no --no-check
  bool ranks = false;                     // --ranks N
  bool prom = false;                      // --format prom (Family::prometheus)
  bool monitor = false;                   // --duration / --cycles
};

// --backend, --format, -o, -q, --min-bw, and those `which` names.
void add_run_options(CLI::App& app, RunOptions& opts, const RunOpts& which = {});
// Only --backend, --format, -o, -q: for list and topo.
void add_output_options(CLI::App& app, RunOptions& opts, bool prom = false);
// For families on host memory only: `auto` means host; another backend is a
// UsageError naming the family.
RunOptions host_only(RunOptions opts, const std::string& family);

EnvInfo env_of(const Backend& backend);

// The backend a run uses. An explicit name must exist and fit the family's
// run (else UsageError with the reason). `auto` takes the first available
// backend that fits, in probe order, and says which it passed over and why
// in `note`; when none fits, the last one's reason is the UsageError. With
// `rt` the choice is collective: every rank takes the same backend.
struct ChosenBackend {
  std::unique_ptr<Backend> backend;
  std::string note;  // "auto passed over cuda: NCCL needs one GPU per rank: ..."
};
ChosenBackend choose_backend(const Family& f, const std::string& name, Runtime* rt);

// Writes `render(format)` to -o FILE (the table also goes to stdout unless
// --quiet) or to stdout. The file is opened before anything runs, so a bad
// path is a usage error, not lost results.
//
// Nothing finished is lost: after begin(), every record a family passes to
// record_done() (core/journal.hpp) is in the file at once, which always
// holds a valid document of the records so far (json, csv and table
// rewritten atomically, a temporary file renamed over it; jsonl appended
// and flushed), and SIGINT/SIGTERM are armed. A run that ends before emit()
// (a stop signal, an error, a lost rank) leaves the file with its records
// and the summary "interrupted": true with what stopped it; on a stop the
// report so far also goes to stdout and a line to stderr says where it
// stopped.
class Output {
 public:
  explicit Output(const RunOptions& opts);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  // The run starts: `head` has the command, env and params (its results and
  // summary are ignored).
  void begin(const Family& f, Report head);
  // The finished report.
  void emit(const std::function<std::string(Format)>& render);
  Format format() const;

 private:
  struct State;
  std::unique_ptr<State> st_;
};

// Monitoring (--duration T / --cycles N): `once` runs cycle after cycle,
// its records stamped with the cycle and t_unix (core/journal.hpp), until
// the time is up or the cycles are done (cycles 0: until a stop signal).
// Without either option, `once` runs once, unstamped. With `rt` the ranks
// agree after each cycle whether to go on. Throws UsageError for a bad
// --duration.
std::vector<Record> run_cycles(const RunOptions& opts, Runtime* rt,
                               const std::function<std::vector<Record>()>& once);
// "30s", "10m", "2h", "1.5h", "500ms": seconds; UsageError otherwise (or <= 0).
double parse_duration(const std::string& text);

// A stop point between two measurements: throws Interrupted (core/journal.hpp)
// once a stop signal came. With `rt` collective: the ranks agree, so a
// signal to any rank stops all of them at the same point.
void stop_point(Runtime* rt);

// -s / -b -e -f -i, shared by every family that sweeps sizes.
struct SizeArgs {
  std::string size, min, max, step;
  double factor = 0;
  bool fixed() const { return !size.empty(); }
  bool sweep_given() const { return !min.empty() || !max.empty() || factor != 0 || !step.empty(); }
};
void add_size_options(CLI::App& app, SizeArgs& a, const std::string& default_min,
                      const std::string& default_max, const std::string& default_factor);
// The sizes asked for, or the default sweep MIN..MAX by FACTOR. Throws
// UsageError for malformed sizes or -s mixed with a sweep.
std::vector<Bytes> sizes_of(const SizeArgs& a, Bytes default_min, Bytes default_max,
                            double default_factor);
std::vector<std::string> split_list(const std::string& s);
// The items of an option's comma list; an empty item ("a,,b", a trailing
// comma) is a UsageError naming the option and giving `example`.
std::vector<std::string> option_list(const std::string& option, const std::string& text,
                                     const std::string& example);
// "4096,65536": sizes, counts, any integers.
template <class T>
std::string join_numbers(const std::vector<T>& values) {
  std::string s;
  for (const T& v : values) s += (s.empty() ? "" : ",") + std::to_string(v);
  return s;
}
// `option` (e.g. "--blocks") given `text`, a comma list of counts in
// 1..max. UsageError for an empty item, a non-number or a count out of
// range; `example` shows a good value in the message.
std::vector<int> parse_count_list(const std::string& option, const std::string& text, int max,
                                  const std::string& example);
// The same for device indices (0, 1, ...).
std::vector<int> parse_index_list(const std::string& option, const std::string& text,
                                  const std::string& example);
// --threads: one count, a comma list ("1,2,4"), or "sweep" (powers of two
// up to the device's cores, resolved once the backend is known). Throws
// UsageError for an empty item, a non-number, or a count outside 1..max.
struct ThreadCounts {
  std::vector<int> values;
  bool sweep = false;
  bool list() const { return sweep || values.size() > 1; }  // records get a threads field
};
ThreadCounts parse_thread_counts(const std::string& text, int max);
// 1, 2, 4, ... up to `cores`; UsageError when the backend does not know its cores.
std::vector<int> thread_sweep(int cores, const std::string& backend);
// Once the backend is known: one count sets `copier.threads`; a list, or a
// sweep up to the most cores of its devices, goes to `runs` (one run each,
// records with a threads field).
void apply_thread_counts(const ThreadCounts& t, const Backend& b, CopierOptions& copier,
                         std::vector<int>& runs);

// --tile: a size, or 0 (direct copies, no staging tile, on GPU backends).
Bytes parse_tile(const std::string& text);
// --window (remote, engine): messages in flight per iteration, one count in
// 1..kMaxWindow. UsageError for 0, a negative, a list or a non-number.
inline constexpr int kMaxWindow = 1 << 16;
int parse_window(const std::string& text);
// Progress on stderr, only on a terminal and without -q, overwritten in place.
Progress progress_for(const RunOptions& opts);

// The exit code of a measured report: 1 when a record failed or, with
// --min-bw, when an ok record's headline metric (schema) is below it.
int finish(const Report& report, const RunOptions& opts, const RecordSchema& schema);

// A single-process run: the backend, the output, the report.
int report_once(const Family& f, Report r, const RunOptions& opts, Output& out);

// The set-up every multi-rank family shares: --ranks re-executes under
// mpiexec, MPI starts, the backend is chosen, `validate` runs on every
// rank, and -o is opened on rank 0 (a bad path fails on every rank alike).
struct Ranked {
  std::string backend_note;  // ChosenBackend::note
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Runtime> rt;
  std::unique_ptr<Output> out;  // rank 0 only
  // The run starts (Output::begin on rank 0; stop signals armed on every
  // rank, as stop_point(rt) needs).
  void begin(const Family& f, const std::string& command, Params params);
  // Fills the environment, prints from rank 0 only, returns the exit code.
  int report(const Family& f, Report r, const RunOptions& opts);
};
Ranked start_ranked(const Family& f, const RunOptions& opts, const Invocation& inv,
                    const std::function<void(Runtime&, Backend&)>& validate);

}  // namespace xb
