// The doctor run: the checks asked take each step in turn (start, compare,
// after_rounds, report); every comparison is measured in interleaved
// rounds and judged on its paired ratios, so a busy node cannot make it
// convict (doctor_rounds); a FAIL must reproduce on fresh rounds.
#include "family/doctor/doctor_run.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/timer.hpp"
#include "family/doctor/doctor_family.hpp"

namespace xb::doctor {

double Context::elapsed_s() const { return now_s() - started_s_; }

void Context::add_peer_comparisons(
    const std::string& check, const std::vector<Probe*>& group,
    const std::function<std::string(const Probe&, Verdict, double)>& why) {
  for (Probe* self : group) {
    add_comparison(
        {check, self->label, "GB/s", Grade{}, group,
         [self, group](std::size_t i) {
           std::vector<double> v;
           v.reserve(group.size());
           for (const Probe* p : group) v.push_back(p->sample(0, i));
           return std::pair(self->sample(0, i), peer_reference(v));
         },
         [self, why](Verdict v, double, double, double ratio) { return why(*self, v, ratio); }});
  }
}

namespace {

class Doctor : public Context {
 public:
  Doctor(Backend& be, const Plan& plan, const std::set<std::string>& asked,
         const Progress& progress, EngineTarget target)
      : Context(be, plan, std::move(target)), progress_(progress) {
    for (auto& c : make_checks())
      if (asked.count(c->name())) checks_.push_back(std::move(c));
  }

  Outcome run() {
    started_s_ = now_s();
    for (auto& c : checks_) c->start(*this);
    reference_ = memcpy_reference(plan_.size, online_cores());
    ProbeNeeds needs;
    for (const auto& c : checks_) needs |= c->needs();
    probes_.build(needs);
    for (auto& c : checks_) c->compare(*this);
    measure();
    for (auto& c : checks_) c->after_rounds(*this);
    // Every comparison is judged on the main rounds before any is measured
    // again: a repeat resets the probes it reads.
    std::vector<Judged> judged;
    for (const PairedCheck& c : comparisons_) judged.push_back(evaluate(c));
    std::vector<Finding> compared;
    for (std::size_t i = 0; i < comparisons_.size(); ++i)
      compared.push_back(finding(comparisons_[i], judged[i]));
    Outcome out{{}, reference_, load_, rounds_};
    for (auto& c : checks_) {
      c->report(*this);
      for (const Finding& f : rows_)
        if (f.check == c->name()) out.findings.push_back(f);
      for (const Finding& f : compared)
        if (f.check == c->name()) out.findings.push_back(f);
    }
    return out;
  }

 private:
  void measure() {
    std::vector<const PairedCheck*> cs;
    for (const PairedCheck& c : comparisons_) cs.push_back(&c);
    const Probes::Measured m = probes_.measure(cs, plan_.budget(), progress_);
    rounds_ = m.rounds;
    load_ = m.load;
  }

  // A comparison's row; a FAIL is measured again on fresh rounds of its own
  // probes and stays FAIL only when it fails again.
  Finding finding(const PairedCheck& c, Judged j) const {
    Finding f{c.check, c.where, Verdict::none, j.measured, j.expected, c.unit, ""};
    if (c.reference_only) {
      f.why = c.why(Verdict::none, j.measured, j.expected, j.judgement.ratio.median);
      return f;
    }
    f.paired_ratio = j.judgement.ratio.median;
    f.verdict = j.judgement.verdict;
    if (f.verdict == Verdict::fail) {
      const Judged first = j;
      const LoadMeter meter;
      j = remeasure(c, plan_.budget());
      const CpuLoad load = meter.stop();
      f.verdict = confirm_fail(first.judgement, j.judgement, c.grade);
      f.paired_ratio = j.judgement.ratio.median;  // the row shows the fresh measurement
      f.measured = j.measured;
      f.expected = j.expected;
      if (f.verdict != Verdict::fail) {
        f.why = fmt::format(
            "did not reproduce: {:.0f} % at first, {:.0f} % measured again ({}): "
            "re-run when the node is quiet",
            first.judgement.ratio.median * 100, j.judgement.ratio.median * 100,
            busy_text(std::max(first.worst_cv, j.worst_cv), load));
        return f;
      }
    }
    f.why = c.why(f.verdict, j.measured, j.expected, j.judgement.ratio.median);
    // (A FAIL confirmed on both measurements together is judged: no such prefix.)
    if (f.verdict != Verdict::fail && !j.judgement.settled &&
        grade(j.judgement.ratio.median, c.grade.warn_below, c.grade.fail_below) != Verdict::pass)
      f.why = fmt::format(
          "could not judge: the node was busy ({}; {:.0f} to {:.0f} % over {} "
          "rounds); {}",
          busy_text(j.worst_cv, load_), j.judgement.ratio.lo * 100, j.judgement.ratio.hi * 100,
          j.judgement.rounds, f.why);
    return f;
  }

  Progress progress_;
  std::vector<std::unique_ptr<Check>> checks_;  // those asked, in the registry's order
};

}  // namespace

Outcome run(Backend& be, const Plan& plan, const std::set<std::string>& checks,
            const Progress& progress, EngineTarget target) {
  Plan p = plan;
  if (!p.d2d_size) {
    Bytes least = 0;  // 0: unknown
    for (const auto& d : be.devices()) {
      try {
        const Bytes f = be.free_memory(MemKind::device, d.id);
        least = least ? std::min(least, f) : f;
      } catch (const std::exception&) {  // that device's own rows say what is wrong
      }
    }
    p.d2d_size = d2d_bytes(p.size, be.name() != "host", least);
  }
  Outcome out = Doctor(be, p, checks, progress, std::move(target)).run();
  out.d2d_size = p.d2d_size;
  return out;
}

}  // namespace xb::doctor

namespace xb {

std::vector<Finding> doctor_census(Backend& backend, const Progress& progress) {
  const std::set<std::string> checks = {"bandwidth", "link",    "direction", "duplex",
                                        "numa",      "devices", "pairs"};
  return doctor::run(backend, doctor::plan_of(true, false), checks, progress).findings;
}

}  // namespace xb
