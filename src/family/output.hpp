#pragma once
// What a run hands the user: the -o file and stdout (Output), the
// environment its report names, progress on a terminal, and the exit code
// of a measured report.
#include <functional>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "core/sweep.hpp"
#include "family/family.hpp"
#include "family/options.hpp"

namespace xb {

// The host, CPU, cores, backend and devices a report was measured on.
EnvInfo env_of(const Backend& backend);
// mpi, ucx, hwloc, kernel and os, each's version as loaded here (env.software).
std::vector<std::pair<std::string, std::string>> software_versions();

// Writes `render(format)` to -o FILE (the table also goes to stdout unless
// --quiet) or to stdout. The path is checked before anything runs, so a bad
// one is a usage error, not lost results; a regular file is never emptied
// or opened for writing: every document goes to it whole, a temporary file
// renamed over it (core/output_file.hpp), so until a run writes its first
// document FILE keeps the previous one (doctor, list and topo write only
// theirs at the end; a run of theirs that is stopped leaves FILE as it was).
//
// Nothing finished is lost: after begin(), every record a family passes to
// record_done() (core/journal.hpp) is in the file at once, which always
// holds a valid document of the records so far (json, csv and table
// replaced whole; jsonl's head line replaces the file, then each record is
// appended and flushed), and SIGINT/SIGTERM are armed. A run that ends before emit()
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

// Progress on stderr, only on a terminal and without -q, overwritten in place.
Progress progress_for(const RunOptions& opts);

// The exit code of a measured report: 1 when a record failed or, with
// --min-bw, when an ok record's headline metric (schema) is below it.
int finish(const Report& report, const RunOptions& opts, const RecordSchema& schema);

// A single-process run's end: the report out, its exit code.
int report_once(const Family& f, Report r, const RunOptions& opts, Output& out);

}  // namespace xb
