#include "family/run.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/sysinfo.hpp"
#include "runtime/liveness.hpp"

namespace xb {

void add_output_options(CLI::App& app, RunOptions& opts, bool prom) {
  app.add_option(
         "--backend", opts.backend,
         "host, cuda, ascend, or auto: the first available that can run the command as asked")
      ->default_str("auto");
  std::vector<std::string> formats{"table", "json", "csv", "jsonl"};
  if (prom) formats.emplace_back("prom");
  app.add_option("--format", opts.format,
                 prom ? "table, json, csv, jsonl, or prom (Prometheus text, for node_exporter's "
                        "textfile collector)"
                      : "table, json, csv or jsonl (a line per record, written as each finishes)")
      ->check(CLI::IsMember(formats))
      ->default_str("table");
  app.add_option("-o,--output", opts.output, "write the --format output to FILE")
      ->type_name("FILE");
  app.add_flag("-q,--quiet", opts.quiet, "no table on stdout when -o is given, no progress");
}

void add_run_options(CLI::App& app, RunOptions& opts, const RunOpts& which) {
  if (!which.iters.empty())
    app.add_option(which.iters_name, opts.iters, which.iters)->check(CLI::Range(1, 10000000));
  if (!which.warmup.empty())
    app.add_option("-w,--warmup", opts.warmup, which.warmup)->check(CLI::Range(0, 1000000));
  if (!which.check.empty()) app.add_flag("--no-check", opts.no_check, which.check);
  if (which.ranks)
    app.add_option("--ranks", opts.ranks, "outside mpiexec: start N ranks under mpiexec")
        ->check(CLI::Range(1, 4096));
  if (which.monitor) {
    auto* d = app.add_option("--duration", opts.duration,
                             "repeat the measurement for this long (30s, 10m, 2h): records get "
                             "cycle and t_unix")
                  ->type_name("TIME");
    auto* c =
        app.add_option("--cycles", opts.cycles, "repeat the measurement N times (0: until Ctrl-C)")
            ->check(CLI::Range(0, 100000000));
    d->excludes(c);
  }
  add_output_options(app, opts, which.prom);
  app.add_option("--min-bw", opts.min_bw,
                 "exit 1 when a record's headline figure (GB/s; coll: busbw) is below this")
      ->check(CLI::NonNegativeNumber);
}

RunOptions host_only(RunOptions opts, const std::string& family) {
  if (opts.backend == "auto") opts.backend = "host";
  if (opts.backend != "host")
    throw UsageError(fmt::format("{} runs on the host backend only in this version (not {})",
                                 family, opts.backend));
  return opts;
}

EnvInfo env_of(const Backend& backend) {
  EnvInfo env;
  env.host = host_name();
  env.cpu = cpu_model();
  env.cores = online_cores();
  env.backend = backend.name();
  for (const auto& d : backend.devices()) env.devices.push_back({d.id, d.name, d.numa});
  return env;
}

struct Output::State {
  RunOptions opts;
  Format format = Format::table;
  std::ofstream stream;  // the -o file (jsonl: appended to as records come)
  bool rewrite = false;  // -o is a regular file: rewritten atomically
  std::timed_mutex mu;   // the watcher of a lost rank writes too
  const Family* family = nullptr;
  Report partial;  // head + the records so far
  bool begun = false, done = false;

  // The document of the records so far to the -o file, whole.
  void write_whole(const std::string& text) {
    if (!rewrite) return;
    const std::string tmp = fmt::format("{}.tmp.{}", opts.output, getpid());
    {
      std::ofstream f(tmp, std::ios::out | std::ios::trunc);
      f << text;
      f.flush();
      if (!f) return;  // best effort: the last good document stays
    }
    if (std::rename(tmp.c_str(), opts.output.c_str()) != 0) std::remove(tmp.c_str());
  }
  void append(const std::string& text) {
    stream << text;
    stream.flush();
  }
  // After a record: the file has it.
  void written(const Record& r) {
    if (format == Format::jsonl) {
      append(jsonl_record(r));
    } else {
      write_whole(render(*family, partial, format));
    }
  }
  // The end of a run cut short: the summary says why (`lost`: the lost
  // rank's line, if that was it), the file keeps the records so far.
  void cut_short(const std::string& stopped_by, const std::string& lost = "") {
    partial.summary.emplace_back("interrupted", true);
    partial.summary.emplace_back("stopped_by", stopped_by);
    if (!lost.empty()) partial.summary.emplace_back("lost", lost);
    partial.summary.emplace_back("records_done", static_cast<std::int64_t>(partial.results.size()));
    if (opts.output.empty()) return;
    if (format == Format::jsonl)
      append(jsonl_summary(partial));
    else
      write_whole(render(*family, partial, format));
  }
};

Output::Output(const RunOptions& opts) : st_(std::make_unique<State>()) {
  st_->opts = opts;
  st_->format = parse_format(opts.format);
  if (opts.output.empty()) return;
  st_->stream.open(opts.output, std::ios::out | std::ios::trunc);
  if (!st_->stream)
    throw UsageError(fmt::format("cannot write -o {}: {}", opts.output, std::strerror(errno)));
  struct stat sb {};
  st_->rewrite = ::stat(opts.output.c_str(), &sb) == 0 && S_ISREG(sb.st_mode);
}

Output::~Output() {
  if (!st_->begun) return;
  set_record_sink({});
  set_last_words({});
  disarm_stop_signals();
  if (st_->done) return;
  // Ended before emit(): a stop signal, or an error unwinding (main prints it).
  std::lock_guard lock(st_->mu);
  const int sig = stop_signal();
  try {
    st_->cut_short(sig ? signal_name(sig) : std::string("error"));
    if (!sig) return;
    State& s = *st_;
    if (s.opts.output.empty() || !s.opts.quiet)
      std::cout << render(*s.family, s.partial, s.opts.output.empty() ? s.format : Format::table)
                << std::flush;
    const Record* last = s.partial.results.empty() ? nullptr : &s.partial.results.back();
    std::fprintf(
        stderr, "xferbench: stopped by %s after %zu record%s%s%s\n", signal_name(sig).c_str(),
        s.partial.results.size(), s.partial.results.size() == 1 ? "" : "s",
        last ? fmt::format(" (the last: {} {} {} B)", last->kase, last->method, last->bytes).c_str()
             : "",
        s.opts.output.empty() ? "" : fmt::format("; {} holds them", s.opts.output).c_str());
  } catch (const std::exception&) {  // a destructor reports nothing more
  }
}

Format Output::format() const { return st_->format; }

void Output::begin(const Family& f, Report head) {
  st_->family = &f;
  head.results.clear();
  head.summary.clear();
  st_->partial = std::move(head);
  st_->begun = true;
  State* s = st_.get();
  if (!s->opts.output.empty()) {
    if (s->format == Format::jsonl)
      s->append(jsonl_head(s->partial));
    else
      s->write_whole(render(f, s->partial, s->format));
  }
  set_record_sink([s](const Record& r) {
    std::lock_guard lock(s->mu);
    s->partial.results.push_back(r);
    if (!s->opts.output.empty()) s->written(r);
  });
  set_last_words([s](const std::string& why) {
    // A deadline on system_clock: its pthread_mutex_timedlock is seen by
    // ThreadSanitizer, steady_clock's pthread_mutex_clocklock is not (gcc 12).
    std::unique_lock lock(s->mu, std::chrono::system_clock::now() + std::chrono::seconds(2));
    if (!lock.owns_lock() || s->opts.output.empty() || s->done) return;
    s->cut_short("lost rank", why);
  });
  arm_stop_signals(launcher_rank() <= 0);
}

void Output::emit(const std::function<std::string(Format)>& render) {
  if (st_->begun) {
    set_record_sink({});
    set_last_words({});
  }
  std::lock_guard lock(st_->mu);
  st_->done = true;
  if (st_->opts.output.empty()) {
    std::cout << render(st_->format) << std::flush;
    return;
  }
  const std::string text = render(st_->format);
  if (st_->rewrite) {
    st_->stream.close();
    st_->write_whole(text);
    std::ifstream check(st_->opts.output);
    if (!check) throw RuntimeError(fmt::format("writing {} failed", st_->opts.output));
  } else {
    st_->stream << text;
    st_->stream.flush();
    if (!st_->stream) throw RuntimeError(fmt::format("writing {} failed", st_->opts.output));
  }
  if (!st_->opts.quiet) std::cout << render(Format::table) << std::flush;
}

double parse_duration(const std::string& text) {
  const auto bad = [&] {
    return UsageError(
        fmt::format("--duration '{}': give a positive time like 30s, 10m, 2h or 500ms", text));
  };
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  const std::string unit = text.substr(used);
  const double scale = unit == "ms"                  ? 1e-3
                       : unit == "s" || unit.empty() ? 1
                       : unit == "m"                 ? 60
                       : unit == "h"                 ? 3600
                                                     : -1;
  if (scale < 0 || !(v > 0) || text[0] == '+' || std::isinf(v)) throw bad();
  return v * scale;
}

std::vector<Record> run_cycles(const RunOptions& opts, Runtime* rt,
                               const std::function<std::vector<Record>()>& once) {
  const double seconds = opts.duration.empty() ? 0 : parse_duration(opts.duration);
  if (seconds == 0 && opts.cycles < 0) return once();
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const bool tty = !opts.quiet && isatty(STDERR_FILENO) && launcher_rank() <= 0;
  std::vector<Record> all;
  for (int cycle = 0;; ++cycle) {
    set_cycle(cycle);
    for (auto& r : once()) all.push_back(std::move(r));
    bool more = opts.cycles > 0 ? cycle + 1 < opts.cycles : opts.cycles == 0 || elapsed() < seconds;
    if (rt) more = rt->min(more ? 1.0 : 0.0) > 0;  // rank 0's clock is not the others'
    if (tty)
      std::fprintf(stderr, "\r\033[Kcycle %d done, %.0f s%s", cycle + 1, elapsed(),
                   seconds > 0       ? fmt::format(" of {:.0f} s", seconds).c_str()
                   : opts.cycles > 0 ? fmt::format(" ({} cycles)", opts.cycles).c_str()
                                     : " (Ctrl-C ends it)");
    if (!more) break;
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  set_cycle(-1);
  return all;
}

void stop_point(Runtime* rt) {
  if (!rt) return stop_point();
  const int sig = static_cast<int>(rt->max(static_cast<double>(stop_signal())));
  if (!sig) return;
  note_stop_signal(sig);
  throw Interrupted(sig);
}

void add_size_options(CLI::App& app, SizeArgs& a, const std::string& default_min,
                      const std::string& default_max, const std::string& default_factor) {
  app.add_option("-s,--size", a.size, "fixed size, e.g. 256M")->type_name("SIZE");
  app.add_option("-b,--minbytes", a.min, "sweep start (default " + default_min + ")")
      ->type_name("SIZE");
  app.add_option("-e,--maxbytes", a.max, "sweep end (default " + default_max + ")")
      ->type_name("SIZE");
  app.add_option("-f,--stepfactor", a.factor, "sweep factor (default " + default_factor + ")")
      ->check(CLI::PositiveNumber);
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

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto comma = s.find(',', start);
    const auto item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> option_list(const std::string& option, const std::string& text,
                                     const std::string& example) {
  if (!text.empty() &&
      (text.front() == ',' || text.back() == ',' || text.find(",,") != std::string::npos))
    throw UsageError(fmt::format("{} '{}': an empty item (give {})", option, text, example));
  return split_list(text);
}

ThreadCounts parse_thread_counts(const std::string& text, int max) {
  ThreadCounts c;
  if (text == "sweep") {
    c.sweep = true;
    return c;
  }
  c.values = parse_count_list("--threads", text, max, "4, 1,2,4 or sweep");
  return c;
}

namespace {

// The integers of a comma list, each in [min, max]; `what` names one in
// messages ("a positive count", "a device index").
std::vector<int> parse_int_list(const std::string& option, const std::string& text, int min,
                                int max, const char* what, const std::string& example) {
  std::vector<int> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    if (item.empty())
      throw UsageError(fmt::format("{} '{}': an empty item (a list is like 1,2,4)", option, text));
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item[0] == '+' || item[0] == '-' || v < min)
      throw UsageError(fmt::format("{} '{}': '{}' is not {} (give {})", option, text, item, what,
                                   example));
    if (v > max)
      throw UsageError(fmt::format("{} {}: more than the {} allowed", option, item, max));
    out.push_back(static_cast<int>(v));
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<int> parse_count_list(const std::string& option, const std::string& text, int max,
                                  const std::string& example) {
  return parse_int_list(option, text, 1, max, "a positive count", example);
}

std::vector<int> parse_index_list(const std::string& option, const std::string& text,
                                  const std::string& example) {
  return parse_int_list(option, text, 0, 1 << 20, "a device index", example);
}

std::vector<int> thread_sweep(int cores, const std::string& backend) {
  if (cores < 1)
    throw UsageError(fmt::format(
        "--threads sweep: the {} backend does not say how many cores its devices have; give a "
        "list",
        backend));
  std::vector<int> out;
  for (int t = 1; t <= cores; t *= 2) out.push_back(t);
  return out;
}

void apply_thread_counts(const ThreadCounts& t, const Backend& b, CopierOptions& copier,
                         std::vector<int>& runs) {
  std::vector<int> values = t.values;
  if (t.sweep) {
    int cores = 0;
    for (const auto& d : b.devices()) cores = std::max(cores, d.cores);
    values = thread_sweep(cores, b.name());
  }
  if (t.list())
    runs = values;
  else if (!values.empty())
    copier.threads = values.front();
}

Bytes parse_tile(const std::string& text) {
  return text == "0" ? 0 : parse_size(text, "--tile size");
}

int parse_window(const std::string& text) {
  if (text.empty()) throw UsageError("--window needs a count (give 64)");
  if (text.find(',') != std::string::npos)
    throw UsageError(fmt::format("--window '{}': one count, not a list (give 64)", text));
  return parse_count_list("--window", text, kMaxWindow, "64")[0];
}

Progress progress_for(const RunOptions& opts) {
  if (opts.quiet || !isatty(STDERR_FILENO)) return {};
  return [](std::size_t done, std::size_t total, const std::string& what) {
    if (done >= total) {
      std::fprintf(stderr, "\r\033[K");
    } else {
      std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", done + 1, total, what.c_str());
    }
    std::fflush(stderr);
  };
}

int finish(const Report& report, const RunOptions& opts, const RecordSchema& schema) {
  const int rc = exit_code(report);
  if (opts.min_bw <= 0) return rc;
  int below = 0;
  std::string worst;
  double lowest = 1e300;
  for (const auto& r : report.results) {
    if (r.status != Status::ok) continue;
    const double bw = schema.headline_value(r);
    if (bw >= opts.min_bw) continue;
    ++below;
    if (bw < lowest) {
      lowest = bw;
      worst = fmt::format("{} {} {} B", r.kase, r.method, r.bytes);
    }
  }
  if (below == 0) return rc;
  std::fprintf(stderr, "xferbench: %d record%s below --min-bw %g GB/s (lowest: %s at %.3f GB/s)\n",
               below, below == 1 ? "" : "s", opts.min_bw, worst.c_str(), lowest);
  return 1;
}

int report_once(const Family& f, Report r, const RunOptions& opts, Output& out) {
  out.emit([&](Format fmt) { return render(f, r, fmt); });
  return finish(r, opts, f.schema());
}

namespace {

// `auto` passes over a backend where every case of the family is waived
// (an explicit --backend still runs there and reports the waived records).
Support some_case_runs(const Family& f, const Backend& b) {
  Registry registry;
  f.cases(registry);
  const Capabilities caps = b.capabilities();
  std::string why;
  for (const auto& def : registry.all()) {
    const Support s = def.filter(caps);
    if (s.ok) return s;
    if (why.empty()) why = s.reason;
  }
  return Support::no(why);
}

// The same verdict on every rank (a rank's failure is everyone's).
Support agreed(Runtime* rt, const Support& s) {
  if (!rt) return s;
  const std::string err = rt->agree(s.ok ? std::string() : s.reason);
  return err.empty() ? Support::yes() : Support::no(err);
}

// The backend `name`, or why not (unknown, unavailable, failing to start).
Support try_make(const std::string& name, std::unique_ptr<Backend>& out) {
  try {
    out = make_backend(name);
    return Support::yes();
  } catch (const std::exception& e) {
    return Support::no(e.what());
  }
}

}  // namespace

// Every rank walks the same candidates and agrees at each step, so all take
// the same backend (or all fail alike) even where their nodes differ.
ChosenBackend choose_backend(const Family& f, const std::string& name, Runtime* rt) {
  if (name != "auto") {
    ChosenBackend c;
    if (const Support s = agreed(rt, try_make(name, c.backend)); !s.ok) throw UsageError(s.reason);
    if (const Support s = agreed(rt, f.fits(*c.backend, rt)); !s.ok) throw UsageError(s.reason);
    return c;
  }
  std::string passed, last;
  for (const auto& p : probe_backends()) {  // the same list, in the same order, on every rank
    // Skipped by all when no rank has it; considered by all when any has.
    const bool anywhere =
        rt ? !rt->agree(p.available ? std::string("available") : std::string()).empty()
           : p.available;
    if (!anywhere) continue;
    ChosenBackend c;
    Support s = p.available ? try_make(p.name, c.backend) : Support::no(p.reason);
    if (s.ok) s = some_case_runs(f, *c.backend);
    s = agreed(rt, s);
    if (s.ok) s = agreed(rt, f.fits(*c.backend, rt));
    if (s.ok) {
      if (!passed.empty()) c.note = "auto passed over " + passed;
      return c;
    }
    passed += fmt::format("{}{}: {}", passed.empty() ? "" : "; ", p.name, s.reason);
    last = s.reason;
  }
  throw UsageError(last.empty() ? std::string("no backend is available") : last);
}

Ranked start_ranked(const Family& f, const RunOptions& opts, const Invocation& inv,
                    const std::function<void(Runtime&, Backend&)>& validate) {
  if (opts.ranks > 0 && !launched_by_mpiexec())
    reexec_under_mpiexec(opts.ranks, inv.argc, inv.argv);
  Ranked r;
  r.rt = make_mpi_runtime();
  ChosenBackend chosen = choose_backend(f, opts.backend, r.rt.get());
  r.backend = std::move(chosen.backend);
  r.backend_note = std::move(chosen.note);
  if (opts.ranks > 0 && opts.ranks != r.rt->size())
    throw UsageError(
        fmt::format("--ranks {} but mpiexec started {} ranks", opts.ranks, r.rt->size()));
  validate(*r.rt, *r.backend);
  std::string err;
  if (r.rt->root()) {
    try {
      r.out = std::make_unique<Output>(opts);
    } catch (const UsageError& e) {
      err = e.what();
    }
  }
  err = r.rt->agree(err);
  if (!err.empty()) throw UsageError(err);
  return r;
}

void Ranked::begin(const Family& f, const std::string& command, Params params) {
  if (out) {
    Report head{command, env_of(*backend), std::move(params), {}, {}};
    head.env.ranks = rt->size();
    head.env.backend_note = backend_note;
    out->begin(f, std::move(head));
  } else {
    arm_stop_signals(false);
  }
}

int Ranked::report(const Family& f, Report r, const RunOptions& opts) {
  r.env = env_of(*backend);
  r.env.ranks = rt->size();
  r.env.backend_note = backend_note;
  if (out) out->emit([&](Format fmt) { return render(f, r, fmt); });
  const int code = finish(r, opts, f.schema());
  set_exit_code_hint(code);  // the results are out: a hung MPI_Finalize ends with this code
  return code;
}

}  // namespace xb
