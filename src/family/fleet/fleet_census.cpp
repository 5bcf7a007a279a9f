#include "family/fleet/fleet_census.hpp"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "backend/common/device_wait.hpp"
#include "backend/select/select.hpp"
#include "core/test_seam.hpp"
#include "family/doctor/doctor_family.hpp"

namespace xb {
namespace {

int severity(Verdict v) {
  return v == Verdict::fail ? 3 : v == Verdict::warn ? 2 : v == Verdict::pass ? 1 : 0;
}

}  // namespace

nlohmann::json finding_json(const Finding& f) {
  return {{"check", f.check},
          {"where", f.where},
          {"verdict", to_string(f.verdict)},
          {"measured", f.measured},
          {"expected", f.expected},
          {"unit", f.unit},
          {"why", f.why}};
}

std::string host_census(const std::string& backend, const std::string& broken, double deadline_s) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    nlohmann::json findings = nlohmann::json::array();
  };
  auto sh = std::make_shared<Shared>();
  if (!broken.empty())
    sh->findings.push_back(finding_json({"backend", "-", Verdict::fail, 0, 0, "", broken}));
  // The thread owns all it uses: left behind past the deadline, it touches
  // nothing of the run's.
  std::thread([sh, backend] {
    nlohmann::json mine = nlohmann::json::array();
    try {
      const std::unique_ptr<Backend> be = make_backend(backend);
      if (test_stall("census")) std::this_thread::sleep_for(std::chrono::hours(24));
      for (const auto& f : doctor_census(*be, {})) mine.push_back(finding_json(f));
    } catch (const std::exception& e) {
      mine.push_back(finding_json({"census", "-", Verdict::fail, 0, 0, "",
                                   fmt::format("the census failed: {}", e.what())}));
    }
    const std::lock_guard lock(sh->mu);
    for (auto& f : mine) sh->findings.push_back(std::move(f));
    sh->done = true;
    sh->cv.notify_all();
  }).detach();
  std::unique_lock lock(sh->mu);
  if (!sh->cv.wait_for(lock, std::chrono::duration<double>(deadline_s), [&] { return sh->done; })) {
    const std::string why = fmt::format(
        "the census did not finish within {:g} s (--census-deadline): a device or library call "
        "stopped answering on this host",
        deadline_s);
    note_device_hung(why);
    nlohmann::json out = sh->findings;  // the broken backend, if any, and this
    out.push_back(finding_json({"census", "-", Verdict::fail, 0, 0, "", why}));
    return out.dump();
  }
  return sh->findings.dump();
}

Verdict verdict_of(const std::string& v) {
  return v == "PASS"   ? Verdict::pass
         : v == "WARN" ? Verdict::warn
         : v == "FAIL" ? Verdict::fail
                       : Verdict::none;
}

// Rank 0: one census row per host. A host's own doctor verdict stands (it
// was measured in paired rounds and a FAIL reproduced); each figure is also
// held against the same check on the other hosts (the median), at most a
// WARN: one measurement per host, not paired rounds across hosts.
std::vector<Finding> census_rows(const std::vector<std::string>& hosts,
                                 const std::vector<std::vector<Finding>>& per_host, Grade g) {
  std::map<std::string, std::vector<double>> figures;  // "check where" -> per host
  for (const auto& fs : per_host)
    for (const auto& f : fs)
      if (f.unit == "GB/s" && f.measured > 0)
        figures[f.check + " " + f.where].push_back(f.measured);
  std::vector<Finding> rows;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    Finding worst{"census", hosts[h], Verdict::pass, 0, 0, "", ""};
    int checks = 0;
    for (const auto& f : per_host[h]) {
      ++checks;
      Verdict v = f.verdict == Verdict::none ? Verdict::pass : f.verdict;
      std::string why = f.why;
      double measured = f.measured, expected = f.expected;
      const auto it = figures.find(f.check + " " + f.where);
      if (it != figures.end() && it->second.size() >= 2 && hosts.size() >= 2) {
        const double ref = peer_reference(it->second);
        const Verdict across = grade(ref > 0 ? f.measured / ref : 1, g.warn_below, g.fail_below);
        if (across != Verdict::pass && severity(Verdict::warn) > severity(v)) {
          v = Verdict::warn;
          expected = ref;
          why = fmt::format("{:.2f} of the same check on the other hosts ({:.3g} GB/s)",
                            f.measured / ref, ref);
        }
      }
      if (severity(v) > severity(worst.verdict)) {
        worst.verdict = v;
        worst.measured = measured;
        worst.expected = expected;
        worst.unit = f.unit;
        worst.why = fmt::format("{} {}: {}", f.check, f.where, why);
      }
    }
    if (worst.verdict == Verdict::pass) {
      worst.measured = checks;
      worst.unit = "checks";
      worst.why = fmt::format("{} local checks pass, none below the other hosts", checks);
    }
    if (checks == 0) {
      worst.verdict = Verdict::none;
      worst.why = "no local check ran";
    }
    rows.push_back(worst);
  }
  return rows;
}

}  // namespace xb
