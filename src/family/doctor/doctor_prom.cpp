// doctor --format prom, and the verdict metrics fleet shares (verdict_prom.hpp).
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <sstream>
#include <vector>
#include <xferbench/version.hpp>

#include "core/units.hpp"
#include "family/doctor/doctor_family.hpp"
#include "family/doctor/verdict_prom.hpp"

namespace xb {
namespace {

// Every unit a verdict record carries, one row each (a check with a new
// unit adds its row here; check_prom.py holds the names to base units).
constexpr PromQuantity kQuantities[] = {
    {"GB/s", "bandwidth_bytes_per_second", "bandwidth_expected_bytes_per_second", 1e9, 1,
     "bytes per second a check measured (its GB/s x 1e9)"},
    {"GB/s raw", "pcie_link_bytes_per_second", "pcie_link_expected_bytes_per_second", 1e9, 1,
     "a PCIe link's raw bytes per second per direction as trained (GT/s x lanes after line "
     "encoding); expected: what the card and its slot can do"},
    {"us", "latency_seconds", "latency_expected_seconds", 1, 1e6,
     "a one-way latency, seconds (its us x 1e-6)"},
    {"% CV", "noise_cv_ratio", "noise_cv_limit_ratio", 1, 100,
     "the spread of a measurement over its rounds (coefficient of variation, 0.10 = 10 %)"},
    {"s held", "clock_held_seconds", "", 1, 1,
     "seconds a device's clocks were held down during the run (power, thermal, board limits)"},
    {"hosts", "hosts", "", 1, 1, "hosts in the run"},
    {"pairs", "completed_pairs", "measured_pairs", 1, 1,
     "pairs of hosts whose transfers completed; expected: the pairs measured"},
    {"checks", "passed_checks", "", 1, 1, "a host's local checks (doctor --quick) that passed"},
    {"% wrong", "wrong_data_ratio", "", 1, 100,
     "the share of a device's checked copies that delivered wrong data (0.01 = 1 %)"},
};

bool one_of(const std::string& w, std::initializer_list<const char*> set) {
  for (const char* s : set)
    if (w == s) return true;
  return false;
}

// "1 MiB" -> bytes, as text; "" where the words are not a size.
std::string size_label(const std::string& number, const std::string& unit) {
  if (!one_of(unit, {"B", "KiB", "MiB", "GiB", "TiB"})) return "";
  try {
    return std::to_string(parse_size(unit == "B" ? number : number + unit.substr(0, 1)));
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

const PromQuantity* prom_quantity(const std::string& unit) {
  for (const PromQuantity& q : kQuantities)
    if (unit == q.unit) return &q;
  return nullptr;
}

PromLabels where_labels(const std::string& where, bool accelerator) {
  const std::string dev = accelerator ? "gpu" : "device";
  std::vector<std::string> w;
  std::istringstream in(where);
  for (std::string s; in >> s;) w.push_back(s);
  PromLabels out;
  std::string op;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::string& t = w[i];
    const std::string next = i + 1 < w.size() ? w[i + 1] : "";
    if (one_of(t, {"h2d", "d2h", "d2d", "p2p", "h2d+d2h"})) {
      out.emplace_back("direction", t);
    } else if (one_of(t, {"dma", "core", "rma", "shm"})) {
      out.emplace_back("method", t);
    } else if (one_of(t, {"duplex", "near"})) {
      out.emplace_back("variant", t);
    } else if (one_of(t, {"get", "put", "allreduce"})) {
      op = t;
      out.emplace_back("op", t);
    } else if (t == "device" && !next.empty()) {
      out.emplace_back(dev, next), ++i;
    } else if (t == "lane" && next != "to" && !next.empty()) {
      out.emplace_back("lane", next), ++i;
    } else if (t == "to" && !next.empty()) {
      out.emplace_back("server", next), ++i;
    } else if (t == "(nic" && !next.empty()) {
      out.emplace_back("nic", next.substr(0, next.find(')'))), ++i;
    } else if (next == "ranks") {
      out.emplace_back("ranks", t), ++i;
    } else if (const std::string b = size_label(t, next); !b.empty()) {
      out.emplace_back("bytes", b), ++i;
    } else if (const auto arrow = t.find("->"); arrow != std::string::npos) {
      const bool ranks = op == "get" || op == "put";
      out.emplace_back(ranks ? "src_rank" : dev, t.substr(0, arrow));
      out.emplace_back(ranks ? "dst_rank" : "peer_" + dev, t.substr(arrow + 2));
    } else if (op == "allreduce" && i + 1 == w.size()) {
      out.emplace_back("dtype", t);
    }
  }
  return out;
}

double verdict_value(const std::string& verdict) {
  return verdict == "PASS" ? 0 : verdict == "WARN" ? 1 : verdict == "FAIL" ? 2 : -1;
}

void add_verdict_samples(PromText& out, const std::string& command, const Record& rec,
                         const PromLabels& labels) {
  const std::string prefix = "xferbench_" + command + "_";
  const double measured = rec.get_or(doctor_field::measured, 0.0);
  const double expected = rec.get_or(doctor_field::expected, 0.0);
  const std::string verdict = rec.get_or(doctor_field::verdict, std::string("-"));
  // A row that measured nothing and holds nothing ("did not run", wrong
  // data): its verdict, no figure.
  const bool ran = measured != 0 || expected != 0;
  if (const PromQuantity* q = prom_quantity(rec.get_or(doctor_field::unit, std::string()))) {
    if (ran) out.add(prefix + q->metric, q->help, labels, in_base_unit(*q, measured));
    if (*q->expected && expected > 0)
      out.add(prefix + q->expected, std::string("expected: ") + q->help, labels,
              in_base_unit(*q, expected));
  }
  if (expected > 0 && ran)
    out.add(prefix + "check_ratio",
            "a check's measured figure over its expected figure (judged on its rounds' median)",
            labels, rec.get_or(doctor_field::ratio, 0.0));
  if (const double v = verdict_value(verdict); v >= 0)
    out.add(prefix + "check_verdict",
            "a check's verdict: 0 PASS, 1 WARN, 2 FAIL (rows with nothing to hold the figure "
            "against have none)",
            labels, v);
}

void add_run_samples(PromText& out, const std::string& command, const Report& r) {
  int fails = 0, warns = 0;
  for (const Record& rec : r.results) {
    const double v = verdict_value(rec.get_or(doctor_field::verdict, std::string("-")));
    fails += v == 2;
    warns += v == 1;
  }
  const std::string prefix = "xferbench_" + command + "_";
  out.add(prefix + "failed_checks", "rows of this run with the verdict FAIL", {}, fails);
  out.add(prefix + "warned_checks", "rows of this run with the verdict WARN", {}, warns);
  out.add("xferbench_build_info",
          "the xferbench that wrote these metrics, the command and its backend (always 1)",
          {{"command", command},
           {"version", kVersion},
           {"revision", kGitDescribe},
           {"backend", r.env.backend}},
          1);
  out.add(prefix + "run_timestamp_seconds", "when this run's metrics were written (Unix time)", {},
          static_cast<double>(std::time(nullptr)));
  // Two rows whose labels say the same (a where text the labels do not
  // tell apart) keep only the first: said, as a bug to report.
  if (out.duplicates() > 0)
    std::fprintf(stderr,
                 "xferbench: internal: %zu Prometheus sample(s) repeated another's labels and were "
                 "left out (please report it)\n",
                 out.duplicates());
}

// One metric per quantity, a sample per row with its labels: the check,
// what its where names, and a GPU's UUID and PCI bus id where the backend
// knows them (dcgm-exporter's labels).
std::string doctor_prometheus(const Report& r) {
  const bool accel = r.env.backend != "host";
  PromText out;
  for (const Record& rec : r.results) {
    PromLabels labels{{"check", rec.kase}};
    for (auto& l : where_labels(rec.method, accel)) {
      if (l.first == "gpu")
        for (const DeviceSummary& d : r.env.devices)
          if (std::to_string(d.id) == l.second) {
            labels.push_back(l);
            labels.emplace_back("UUID", d.uuid);
            labels.emplace_back("pci_bus_id", d.pci_bus_id);
            l.first.clear();
          }
      if (!l.first.empty()) labels.push_back(std::move(l));
    }
    add_verdict_samples(out, "doctor", rec, labels);
  }
  add_run_samples(out, "doctor", r);
  return out.text();
}

}  // namespace xb
