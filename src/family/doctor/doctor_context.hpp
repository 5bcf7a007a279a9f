#pragma once
// A doctor check: one object, in its own file (check_NAME.cpp), listed once
// in doctor_registry.cpp. It says what it measures and against what, asks
// for the probes it reads, and turns them into rows: comparisons judged on
// the paired rounds (its expected figure per round and a sentence per
// verdict), or rows of its own (a link's training, the engine, clocks).
// The run (doctor_run.cpp) calls every check asked at each of its steps,
// in the registry's order, and reports each check's rows in that order.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "family/doctor/doctor_checks.hpp"
#include "family/doctor/doctor_probe.hpp"
#include "family/doctor/doctor_rounds.hpp"

namespace xb::doctor {

// doctor --engine-server: where the engine's lanes go.
struct EngineTarget {
  std::vector<std::pair<std::string, int>> servers;
  std::vector<std::string> nics;
  std::string token;
};

// What a check sees of a doctor run, and where its rows go.
class Context {
 public:
  Context(Backend& be, const Plan& plan, EngineTarget target)
      : be_(be), plan_(plan), target_(std::move(target)), probes_(be, plan.size, plan.d2d_size) {}
  virtual ~Context() = default;

  Backend& backend() const { return be_; }
  const Plan& plan() const { return plan_; }
  const EngineTarget& engine_target() const { return target_; }
  const Probes& probes() const { return probes_; }
  double reference() const { return reference_; }  // host memcpy on all cores, GB/s
  const CpuLoad& load() const { return load_; }    // around the main rounds
  int rounds() const { return rounds_; }           // the main rounds run
  double elapsed_s() const;                        // since the run began

  // A row judged on the rounds (doctor_rounds: PairedCheck). Its verdict,
  // a FAIL measured again, and the sentence come from the run.
  void add_comparison(PairedCheck c) { comparisons_.push_back(std::move(c)); }
  // Each member of `group` against the group, round by round: its sample
  // against the reference of that round's samples (peer_reference).
  void add_peer_comparisons(const std::string& check, const std::vector<Probe*>& group,
                            const std::function<std::string(const Probe&, Verdict, double)>& why);
  // A row as it stands. A check's rows come in the order added, before
  // its comparisons.
  void add_row(Finding f) { rows_.push_back(std::move(f)); }

 protected:
  Backend& be_;
  Plan plan_;
  EngineTarget target_;
  Probes probes_;
  double started_s_ = 0, reference_ = 0;
  CpuLoad load_;
  int rounds_ = 0;
  std::vector<PairedCheck> comparisons_;
  std::vector<Finding> rows_;
};

class Check {
 public:
  // `name` as --checks takes it and the rows carry it; `what` one line for
  // --help: what it measures and what it is held against.
  Check(std::string name, std::string what) : name_(std::move(name)), what_(std::move(what)) {}
  virtual ~Check() = default;
  const std::string& name() const { return name_; }
  const std::string& what() const { return what_; }

  // The probes its comparisons read (none: it measures on its own).
  virtual ProbeNeeds needs() const { return {}; }
  // The run's steps, in order; each check asked takes each step in the
  // registry's order. Before anything is measured:
  virtual void start(Context&) {}
  // Once the probes exist, before the rounds: its comparisons.
  virtual void compare(Context&) {}
  // After the rounds, before any comparison is measured again (a FAIL's
  // second measurement resets the probes it reads).
  virtual void after_rounds(Context&) {}
  // In its turn, after every comparison is judged: rows it measures itself.
  virtual void report(Context&) {}

 private:
  std::string name_, what_;
};

// Every check, in the order doctor runs and reports them (doctor_registry.cpp).
std::vector<std::unique_ptr<Check>> make_checks();
// Their names, in that order.
const std::vector<std::string>& check_names();
// "  name  what it measures" a line each, for --help.
std::string checks_help();

}  // namespace xb::doctor
