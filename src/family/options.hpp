#pragma once
// The options every family's command shares: their values (RunOptions),
// which of them a family offers (OfferedOptions), each declared here once
// with one range, and the size sweep (-s / -b -e -f -i).
#include <string>
#include <vector>

#include "core/corruption.hpp"
#include "core/units.hpp"

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace xb {

// The values of the run options. A value left unset keeps the family's
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
  std::string check;     // --check every|last|none ("": the family's default, last)
  int check_iters = 0;   // --check-iters N: --check every -n N (0: not given)
  int ranks = 0;         // --ranks: 0 = as launched
  std::string duration;  // --duration: repeat for this long ("10m")
  int cycles = -1;       // --cycles: repeat this many times, 0 until stopped; -1 not given

  int iters_or(int dflt) const { return check_iters > 0 ? check_iters : iters > 0 ? iters : dflt; }
  int warmup_or(int dflt) const { return warmup >= 0 ? warmup : dflt; }
};

// Which of the per-run options a family offers, and their help text (with
// the family's own defaults in it).
struct OfferedOptions {
  std::string iters;  // "-n" help, e.g. "timed iterations (default 20)"; empty: no -n
  std::string iters_name = "-n,--iters";  // engine counts loops: "-n,--loops"
  std::string warmup;                     // "-w" help; empty: no -w
  std::string check;                      // "--no-check" help; empty: no --no-check
  // Also --check every|last|none and --check-iters N (core/corruption.hpp):
  // the family checks each timed iteration when asked.
  bool check_every = false;
  bool ranks = false;    // --ranks N
  bool prom = false;     // --format prom (Family::prometheus)
  bool monitor = false;  // --duration / --cycles
  // What a cycle gives, for their help.
  std::string cycle_gives = "records get cycle and t_unix";
};

// A number option's check: a finite number in [lo, hi] (lo excluded when
// `above`), else one line naming the option and what it takes ("--timeout:
// 'nan' is not a number: give seconds > 0"). CLI11's own range checks let
// NaN through and print DBL_MAX in full. Returns `o`.
// `want` says what it takes in messages (default: "a number >= 0" etc).
CLI::Option* number_in(CLI::Option* o, double lo, double hi, bool above = false,
                       std::string want = {});
// --check's modes: every, last, none; else one line naming what it takes.
CLI::Validator check_modes();
// Seconds: a finite number > 0, at most a year.
CLI::Option* positive_seconds(CLI::Option* o);

// --backend, --format, -o, -q, --min-bw, and those `offered` names.
void add_run_options(CLI::App& app, RunOptions& opts, const OfferedOptions& offered = {});
// Only --backend, --format, -o, -q (add_run_options calls it). `records`
// false: the command writes facts, not records (list, topo), and its
// --format help offers table and json only.
void add_output_options(CLI::App& app, RunOptions& opts, bool prom = false, bool records = true);
// --check, --check-iters and --no-check as one mode (last when none is given).
CheckMode check_mode(const RunOptions& opts);

// For families on host memory only: `auto` means host; another backend is a
// UsageError naming the family.
RunOptions host_only(RunOptions opts, const std::string& family);

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

}  // namespace xb
