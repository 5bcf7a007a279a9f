#include "family/output.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>

#include "backend/common/hwloc_util.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/output_file.hpp"
#include "core/schema.hpp"
#include "core/sysinfo.hpp"
#include "engine/ucx.hpp"
#include "runtime/liveness.hpp"
#include "runtime/runtime.hpp"

namespace xb {

std::vector<std::pair<std::string, std::string>> software_versions() {
  return {{"mpi", mpi_library()},
          {"ucx", engine::ucx_version()},
          {"hwloc", hwloc_version()},
          {"kernel", kernel_release()},
          {"os", os_name()}};
}

EnvInfo env_of(const Backend& backend) {
  EnvInfo env;
  env.host = host_name();
  env.cpu = cpu_model();
  env.cores = online_cores();
  env.backend = backend.name();
  for (const auto& d : backend.devices())
    env.devices.push_back({d.id, d.name, d.numa, d.pci_bus_id, d.uuid});
  env.software = software_versions();
  for (auto& s : backend.software()) env.software.push_back(std::move(s));
  return env;
}

struct Output::State {
  RunOptions opts;
  Format format = Format::table;
  std::ofstream stream;  // the -o file: a device's, or jsonl's appended records
  bool rewrite = false;  // -o is a regular file (or none yet): replaced whole
  std::timed_mutex mu;   // the watcher of a lost rank writes too
  const Family* family = nullptr;
  Report partial;  // head + the records so far
  bool begun = false, done = false;

  // A whole document to the -o file (core/output_file.hpp); "" or why not.
  std::string write_whole(const std::string& text) {
    if (!rewrite) return "";
    return replace_file(opts.output, text);
  }
  void append(const std::string& text) {
    stream << text;
    stream.flush();
  }
  // After a record: the file has it. Not prom's: an exposition is a whole
  // run's metrics (node_exporter's textfile collector would serve half a
  // run's as the node's state), written by emit() only.
  void written(const Record& r) {
    if (format == Format::prom) return;
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
    if (opts.output.empty() || format == Format::prom) return;  // keeps the last whole one
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
  // Checked, not opened: a regular file keeps its document until a new whole
  // one replaces it, so a run stopped before it writes leaves it as it was.
  check_output(opts.output);
  st_->rewrite = replaced_whole(opts.output);
  if (st_->rewrite) return;
  st_->stream.open(opts.output, std::ios::out | std::ios::trunc);
  if (!st_->stream)
    throw UsageError(fmt::format("cannot write -o {}: {}", opts.output, std::strerror(errno)));
}

Output::~Output() {
  if (!st_->begun) {
    // A family whose report is one document (gemm-ar) stopped before it.
    if (const int sig = stop_signal(); sig && !st_->done)
      std::fprintf(stderr, "xferbench: stopped by %s before the report%s\n",
                   signal_name(sig).c_str(),
                   st_->opts.output.empty()
                       ? ""
                       : fmt::format("; {} keeps what it held", st_->opts.output).c_str());
    return;
  }
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
  if (!s->opts.output.empty() && s->format != Format::prom) {
    const bool jsonl = s->format == Format::jsonl;
    const std::string first = jsonl ? jsonl_head(s->partial) : render(f, s->partial, s->format);
    if (!s->rewrite) {
      s->append(first);
    } else if (const std::string why = s->write_whole(first); !why.empty()) {
      throw RuntimeError(fmt::format("cannot write -o {}: {}", s->opts.output, why));
    } else if (jsonl) {  // the records follow the head line as they come
      s->stream.open(s->opts.output, std::ios::out | std::ios::app);
      if (!s->stream)
        throw RuntimeError(
            fmt::format("cannot write -o {}: {}", s->opts.output, std::strerror(errno)));
    }
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
    if (const std::string why = st_->write_whole(text); !why.empty())
      throw RuntimeError(fmt::format("writing {} failed: {}", st_->opts.output, why));
  } else {
    st_->stream << text;
    st_->stream.flush();
    if (!st_->stream) throw RuntimeError(fmt::format("writing {} failed", st_->opts.output));
  }
  if (!st_->opts.quiet) std::cout << render(Format::table) << std::flush;
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
  // A field the schema lacks is a bug in the family (compare and --fields
  // cannot see it): said once, after the results are written, never fatal,
  // so a developer's slip does not cost a user's run. On CPU-only CI the
  // device-only fields are never written, so the check runs for users too.
  for (const Record& rec : report.results)
    if (const auto u = undeclared_fields(schema, rec); !u.empty()) {
      std::fprintf(stderr,
                   "xferbench: internal: %s records carry fields its schema does not declare: %s "
                   "(the results are written; please report it)\n",
                   schema.family().c_str(), fmt::format("{}", fmt::join(u, ", ")).c_str());
      break;
    }
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

}  // namespace xb
