// `xferbench doctor`: measures every path of the machine on one backend,
// holds each figure against what its link should give, and names what is
// wrong. The family: its options, schema and outputs; the checks are a
// table (doctor_registry.cpp, a file each), run by doctor_run.cpp.
#include "family/doctor/doctor_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "family/backend_choice.hpp"
#include "family/cycles.hpp"
#include "family/doctor/doctor_ranks.hpp"
#include "family/doctor/doctor_run.hpp"
#include "family/engine/engine_bench.hpp"
#include "family/options.hpp"
#include "family/output.hpp"
#include "family/parse.hpp"
#include "runtime/runtime.hpp"

namespace xb {
namespace {

// --help's footer, around the list of checks (doctor_registry.cpp).
constexpr const char* kAbout =
    R"(Measures h2d, d2h and d2d per device with both methods, the p2p matrix, a 4 KiB
latency and the engine on loopback, then holds each figure against what its
link should give: PCIe generation x width (sysfs), device memory clock x bus
width, NVLink count x per-link rate (NVML), the host's memcpy on all cores;
compares directions, devices and pairs of one link class; flags noisy
measurements and clocks held down by power or thermal limits (NVML). Exit 1
when a check fails.
Checks, in the order they run and report (--checks):
)";
constexpr const char* kOnABusyNode =
    R"(On a busy node: every comparison is measured in interleaved rounds and
judged on the ratio of each round; a verdict noise could change gets more
rounds (up to 3x the first ones' time, --quick 2x), then is at most WARN
("could not judge"), and a FAIL is measured again and must fail again.
Examples:
  xferbench doctor
  xferbench doctor --quick --format json -o doctor.json
  xferbench doctor --quick -q --format prom -o /var/lib/node_exporter/textfile/xferbench.prom
  xferbench doctor --backend cuda --checks bandwidth,link,direction
  xferbench doctor --ranks 2        # also remote get and an allreduce across 2 ranks
  xferbench doctor --checks engine --engine-server 10.0.0.2:20000 --nic eth0,eth1 --token-file tok)";

class DoctorFamily final : public Family {
 public:
  DoctorFamily() {
    schema_
        .add(doctor_field::verdict, FieldRole::info,
             "PASS, WARN, FAIL, or - (nothing to hold it against)")
        .add(doctor_field::measured, FieldRole::metric, "the measured figure, in `unit`")
        .add(doctor_field::expected, FieldRole::metric, "what the link should give; 0: none")
        .add(doctor_field::ratio, FieldRole::metric, "measured / expected")
        .add(doctor_field::unit, FieldRole::info, "GB/s, us, % CV")
        .add(doctor_field::why, FieldRole::info, "one sentence: why, and where to look")
        .headline(doctor_field::ratio);
  }
  std::string name() const override { return "doctor"; }
  bool judges_machines() const override { return true; }
  std::string summary() const override {
    return "measure every path, hold it against its link, name what is wrong";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override {
    r.add({"doctor.checks", "doctor",
           "copies per device and method, p2p, latency, engine: verdicts against the topology",
           [](const Capabilities&) { return Support::yes(); }});
  }
  std::string table_note(const Report& r) const override { return doctor_table_note(r); }
  std::string tables(const Report& r) const override { return doctor_tables(r); }
  std::string prometheus(const Report& r) const override { return doctor_prometheus(r); }

  void add_options(CLI::App& app) override {
    auto* q = app.add_flag("--quick", quick_,
                           "a short suite (16 MiB, 5 rounds and more while noisy: seconds)");
    auto* f =
        app.add_flag("--full", full_, "a long suite (256 MiB, 10 rounds and more while noisy)");
    q->excludes(f);
    app.add_option("--checks", checks_,
                   fmt::format("comma list of checks to run (default all): {}",
                               fmt::join(doctor::check_names(), ", ")));
    app.add_option("--engine-server", engine_servers_,
                   "the engine check runs lanes to these servers (HOST:PORT list, `engine serve` "
                   "there) instead of the loopback selftest: a row per lane, held against the "
                   "other lanes and its NIC's line rate x 0.80")
        ->type_name("LIST");
    app.add_option("--nic", engine_nics_,
                   "with --engine-server: a lane per NIC (UCX_NET_DEVICES), or one per server "
                   "when they are as many")
        ->type_name("LIST");
    app.add_option("--token-file", engine_token_file_,
                   "with --engine-server: the servers' token (or XFERBENCH_TOKEN)");
    OfferedOptions which;
    which.ranks = true;
    which.prom = true;
    which.monitor = true;
    which.cycle_gives =
        "each cycle's whole report replaces -o (one complete Prometheus exposition a cycle)";
    add_run_options(app, run_, which);
    app.footer(kAbout + doctor::checks_help() + kOnABusyNode);
  }

  int run(const Invocation&) override {
    // Under a launcher (`srun -N 4 --ntasks-per-node=8 xferbench doctor`, as
    // operators schedule a health check): doctor checks the node it runs
    // on, once: the node's first process runs it, the others leave at once,
    // exit 0, without a word (a job's usual layout of a task per GPU must
    // not run eight doctors on one node, nor fail the step). --ranks starts
    // a launcher of its own.
    if (launch_seen().size > 1 || launched_by_mpiexec()) {
      if (run_.ranks > 0)
        throw UsageError(
            "doctor --ranks starts its own launcher: give it outside mpiexec, mpirun or srun");
      if (launcher_local_rank() > 0) return 0;
    }
    if (run_.ranks == 1) throw UsageError("--ranks 1: the cross-rank checks need at least 2");
    const std::set<std::string> checks = checks_asked();
    const doctor::Plan plan = doctor::plan_of(quick_, full_);
    doctor::EngineTarget target = engine_target();
    ChosenBackend chosen = choose_backend(*this, run_.backend, nullptr);
    Backend& be = *chosen.backend;
    Output out(run_);
    // --duration / --cycles: the whole doctor again each cycle, each
    // report written whole (-o replaced: node_exporter's textfile collector
    // reads the last cycle's); the exit code is the worst cycle's.
    int rc = 0, cycle = 0;
    run_cycles(run_, nullptr, [&] {
      Report report = once(be, chosen.broken, plan, checks, target);
      if (monitoring()) report.params.emplace_back("cycle", std::int64_t{cycle++});
      out.emit([&](Format fmt) { return render(*this, report, fmt); });
      rc = std::max(rc, finish(report, run_, schema_));
      return std::vector<Record>{};
    });
    return rc;
  }

 private:
  bool monitoring() const { return !run_.duration.empty() || run_.cycles >= 0; }

  // One doctor run on `be`: its report.
  Report once(Backend& be, const std::string& broken, const doctor::Plan& plan,
              const std::set<std::string>& checks, doctor::EngineTarget target) const {
    doctor::Outcome doc = doctor::run(be, plan, checks, progress_for(run_), std::move(target));
    std::vector<Finding>& findings = doc.findings;
    if (!broken.empty())  // a GPU there but failing: the machine's first finding
      findings.insert(findings.begin(), {"backend", "-", Verdict::fail, 0, 0, "", broken});
    if (run_.ranks > 1) {
      for (auto& f : doctor::cross_rank(run_.ranks, be.name(), doc.reference))
        findings.push_back(f);
    } else if (run_.ranks == 0) {
      findings.push_back({"ranks", "-", Verdict::none, 0, 0, "",
                          "remote get and allreduce not run: give --ranks N (N >= 2)"});
    }
    Report report{"doctor",
                  env_of(be),
                  {{"depth", plan.depth},
                   {"size", static_cast<std::int64_t>(plan.size)},
                   {"d2d_size", static_cast<std::int64_t>(doc.d2d_size)},
                   {"iters", std::int64_t{plan.iters}},
                   {"checks", checks_.empty() ? std::string("all") : checks_},
                   {"reference_gbps", doc.reference},
                   {"rounds", std::int64_t{doc.rounds}},
                   {"other_cores", doc.load.other_cores}},
                  {},
                  {}};
    for (const Finding& f : findings)  // the d2d rows measured at their own size
      report.results.push_back(
          finding_record(f, f.where.rfind("d2d ", 0) == 0 ? doc.d2d_size : plan.size));
    return report;
  }

  // --checks: names from the registry (default: all of them).
  std::set<std::string> checks_asked() const {
    const auto& names = doctor::check_names();
    if (checks_.empty()) return {names.begin(), names.end()};
    std::set<std::string> checks;
    for (const auto& c : option_set("--checks", checks_, "latency,noise")) {
      if (std::find(names.begin(), names.end(), c) == names.end())
        throw UsageError(
            fmt::format("--checks: unknown check '{}' ({})", c, fmt::join(names, ", ")));
      checks.insert(c);
    }
    if (checks.empty()) throw UsageError("--checks needs at least one check");
    return checks;
  }

  // --engine-server, --nic, --token-file: where the engine check's lanes go.
  doctor::EngineTarget engine_target() const {
    doctor::EngineTarget target;
    if (!engine_nics_.empty() && engine_servers_.empty())
      throw UsageError("--nic: give the engine servers its lanes go to (--engine-server)");
    if (engine_servers_.empty()) return target;
    target.servers = parse_engine_servers(engine_servers_);
    if (!engine_nics_.empty())
      for (const auto& n : option_list("--nic", engine_nics_, "eth0,eth1")) {
        check_engine_nic(n);
        target.nics.push_back(n);
      }
    target.token = engine::load_token(engine_token_file_);
    if (target.token.empty())
      throw UsageError(
          "--engine-server: give the servers' token (--token-file or XFERBENCH_TOKEN)");
    return target;
  }

  bool quick_ = false, full_ = false;
  std::string checks_;
  std::string engine_servers_, engine_nics_, engine_token_file_;
  RunOptions run_;
  RecordSchema schema_{"doctor"};
};

}  // namespace

std::unique_ptr<Family> make_doctor_family() { return std::make_unique<DoctorFamily>(); }

Record finding_record(const Finding& f, Bytes size) {
  Record r;
  r.kase = f.check;
  r.method = f.where;
  r.bytes = size;
  if (f.verdict == Verdict::fail) {
    r.status = Status::failed;
    r.reason = f.why;
  }
  r.set(doctor_field::verdict, std::string(to_string(f.verdict)));
  r.set(doctor_field::measured, f.measured);
  r.set(doctor_field::expected, f.expected);
  r.set(doctor_field::ratio, f.ratio());
  r.set(doctor_field::unit, f.unit);
  r.set(doctor_field::why, f.why);
  return r;
}

}  // namespace xb
