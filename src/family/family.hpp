#pragma once
// A benchmark family (copy, coll, doctor, ...: cli/families.cpp lists them) as one object:
// its subcommand and options, what runs when it is chosen, the schema of the
// records it emits, the cases `list` shows, and its table. Each family lives
// in its own folder under family/ and is registered once, in
// cli/families.cpp; everything that handles records (list, compare,
// --min-bw, JSON, CSV, the table) goes through this interface instead of
// switching on command names.
#include <memory>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "core/schema.hpp"
#include "report/report.hpp"

namespace CLI {
class App;
}

namespace xb {

class Backend;
class Runtime;

// The process's command line: multi-rank families re-execute it under
// mpiexec for --ranks N.
struct Invocation {
  int argc = 0;
  char** argv = nullptr;
};

class Family {
 public:
  virtual ~Family() = default;
  virtual std::string name() const = 0;     // the subcommand: "coll"
  virtual std::string summary() const = 0;  // one line for --help
  virtual const RecordSchema& schema() const = 0;
  // The cases `list` shows, each with its capability filter.
  virtual void cases(Registry& registry) const = 0;
  // Binds the family's options straight into its config, on its subcommand.
  virtual void add_options(CLI::App& app) = 0;
  // Runs what the parsed options ask for; returns the exit code.
  virtual int run(const Invocation& inv) = 0;
  // Whether this run, as its options ask, can use `backend`: `auto` passes a
  // backend over with this reason, an explicit --backend fails with it (exit
  // 2). `rt`: the ranks of a multi-rank family (the call is then collective
  // and its verdict the same on every rank), null for a single process.
  // Whether the family judges the machine it runs on (doctor, fleet): a
  // backend present but broken is then one of its findings, not the end of
  // the run (family/backend_choice.hpp).
  virtual bool judges_machines() const { return false; }
  virtual Support fits(Backend& backend, Runtime* rt) const;
  // The table: how the figures are counted (one line under the header) and
  // the family's tables of records.
  virtual std::string table_note(const Report& r) const;
  virtual std::string tables(const Report& r) const = 0;
  // --format prom (OfferedOptions::prom): the Prometheus text exposition format.
  virtual std::string prometheus(const Report& r) const;
};

// The family's whole human report: header, note, tables, summary, counts.
std::string render_table(const Family& f, const Report& r);
// The report in any format (the table through the family's renderer).
std::string render(const Family& f, const Report& r, Format fmt);

// The `list` filter of families that move host memory only in this version.
Support host_memory_only(const Capabilities& c);

using Families = std::vector<std::unique_ptr<Family>>;
const Family* find_family(const Families& all, const std::string& name);

}  // namespace xb
