// `xferbench doctor`: measures every path of the machine on one backend,
// holds each figure against what its link should give, and names what is
// wrong. Every comparison is measured in interleaved rounds and judged on
// its paired ratios, so a busy node cannot make it convict (doctor_rounds).
#include "family/doctor/doctor_family.hpp"

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/stats.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "family/copy/copy_bench.hpp"
#include "family/doctor/doctor_checks.hpp"
#include "family/doctor/doctor_rounds.hpp"
#include "family/engine/engine_bench.hpp"
#include "family/run.hpp"
#include "report/table_kit.hpp"
#include "runtime/runtime.hpp"

namespace xb {
namespace {


const std::vector<std::string> kChecks = {"bandwidth", "link",    "direction", "duplex",
                                          "numa",      "devices", "pairs",     "latency",
                                          "engine",    "noise",   "clocks"};

// How much doctor measures: the copy size, the first rounds, and the budget
// for more rounds while a verdict is unsettled (factor x the first rounds'
// time, at least floor_s; a FAIL measured again gets the same).
struct Plan {
  std::string depth = "default";  // quick, default, full
  Bytes size = 64ULL << 20;
  int iters = 5, warmup = 2;
  double budget_factor = 3, budget_floor_s = 1;
  Budget budget() const { return {iters, warmup, budget_factor, budget_floor_s, 200}; }
};

Plan plan_of(bool quick, bool full) {
  if (quick) return {"quick", 16ULL << 20, 5, 1, 2, 0.5};
  if (full) return {"full", 256ULL << 20, 10, 3, 3, 2};
  return {};
}

// What a device's PCIe link should give: raw GB/s per direction, if reported.
std::optional<double> pcie_raw_gbps(const LinkFacts& f) {
  return pcie_expected_raw(f.pcie_current_speed, f.pcie_max_speed, f.pcie_width,
                           f.pcie_max_width);
}

// "Gen5 x16" of the figure pcie_raw_gbps takes ("" where none).
std::string pcie_text(const LinkFacts& f) {
  const auto l = pcie_expected_link(f.pcie_current_speed, f.pcie_max_speed, f.pcie_width,
                                    f.pcie_max_width);
  return l ? fmt::format("{} x{}", pcie_generation(l->gts), l->lanes) : std::string();
}

// The host memory reference: memcpy of `size` bytes split over every core,
// best of 5, GB/s (decimal).
double memcpy_reference(Bytes size, int threads) {
  std::unique_ptr<void, decltype(&std::free)> a(alloc_pages(size), &std::free),
      b(alloc_pages(size), &std::free);
  if (!a || !b) throw RuntimeError("doctor: cannot allocate the memcpy reference buffers");
  std::memset(a.get(), 1, size);
  std::memset(b.get(), 0, size);
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = Clock::now();
    std::vector<std::thread> th;
    const Bytes per = size / static_cast<Bytes>(threads) / 64 * 64;
    for (int i = 0; i < threads; ++i)
      th.emplace_back([&, i] {
        const Bytes off = per * static_cast<Bytes>(i);
        const Bytes n = i == threads - 1 ? size - off : per;
        std::memcpy(static_cast<std::byte*>(b.get()) + off, static_cast<std::byte*>(a.get()) + off,
                    n);
      });
    for (auto& t : th) t.join();
    best = std::max(best, static_cast<double>(size) / (elapsed_us(t0, Clock::now()) * 1e3));
  }
  return best;
}

// One path doctor measures: a case between two ends (-1: host) by a method.
struct Path {
  std::string kase;  // h2d, d2h, d2d, p2p
  int src = -1, dst = -1;
  Method method = Method::dma;
  int device() const { return kase == copy_case::h2d ? dst : src; }
  std::string where() const {
    if (kase == copy_case::p2p) return fmt::format("p2p {}->{} {}", src, dst, to_string(method));
    return fmt::format("{} device {} {}", kase, device(), to_string(method));
  }
};

// "CV 61 %, other processes used 1.7 of 2 cores": the noise of a measurement
// and the load around it.
std::string busy_text(double cv, const CpuLoad& load) {
  std::string s = fmt::format("CV {:.0f} %", cv * 100);
  if (load.known)
    s += fmt::format(", other processes used {:.1f} of {} cores", load.other_cores,
                     online_cores());
  return s;
}

// doctor --engine-server: where the engine's lanes go.
struct DoctorEngineTarget {
  std::vector<std::pair<std::string, int>> servers;
  std::vector<std::string> nics;
  std::string token;
};

class Doctor {
 public:
  Doctor(Backend& be, const Plan& plan, const std::set<std::string>& checks,
         const Progress& progress)
      : be_(be), plan_(plan), checks_(checks), progress_(progress) {}

  // --engine-server: the engine's lanes to those servers, a NIC each.
  void set_engine_target(DoctorEngineTarget t) { engine_target_ = std::move(t); }

  std::vector<Finding> run() {
    const double t0 = now_s();
    if (on("clocks"))
      for (const auto& d : be_.devices()) holds_before_.push_back(be_.clock_holds(d.id));
    reference_ = memcpy_reference(plan_.size, online_cores());
    prepare();
    measure();
    noise_ = noise_rows();
    // Every comparison is judged on the main rounds before any is measured
    // again: a repeat resets the probes it reads.
    std::vector<Judged> judged;
    for (const PairedCheck& c : comparisons_) judged.push_back(evaluate(c));
    std::vector<Finding> rows;
    for (std::size_t i = 0; i < comparisons_.size(); ++i)
      rows.push_back(finding(comparisons_[i], judged[i]));
    for (const std::string& check : kChecks) {
      if (!on(check)) continue;
      if (check == "link") links();
      if (check == "latency") latency();
      if (check == "engine") engine();
      if (check == "noise")
        for (Finding& f : noise_) add(f);
      if (check == "clocks") clocks(now_s() - t0);
      for (Finding& f : unrun_)
        if (f.check == check) add(f);
      for (std::size_t i = 0; i < comparisons_.size(); ++i)
        if (comparisons_[i].check == check) add(rows[i]);
    }
    return findings_;
  }
  double reference() const { return reference_; }
  const CpuLoad& load() const { return load_; }
  int rounds() const { return rounds_; }

 private:
  bool on(const std::string& c) const { return checks_.count(c) > 0; }
  void add(Finding f) { findings_.push_back(std::move(f)); }

  // ---- the probes ----

  Buffer& buffer(MemKind kind, int device, std::optional<std::uint64_t> seed) {
    buffers_.push_back(be_.allocate(kind, device, plan_.size));
    Buffer& b = *buffers_.back();
    if (seed) fill_buffer(be_, b, plan_.size, *seed);
    else poison_buffer(be_, b, plan_.size);
    return b;
  }

  Probe& probe(const std::string& label, Method m, std::vector<CopyOp> ops,
               std::vector<std::uint64_t> seeds) {
    Probe& p = probes_.emplace_back();
    p.label = label;
    p.copier = copiers_.at(m).get();
    p.ops = std::move(ops);
    p.seeds = std::move(seeds);
    for (std::size_t k = 0; k < p.ops.size(); ++k) checked_[p.ops[k].dst] = p.seeds[k];
    return p;
  }

  // Buffers and probes for the checks asked, all alive at once: the rounds
  // interleave them. Per device: h2d, d2h, d2d by each method, h2d from a
  // buffer on the device's NUMA node, h2d+d2h at once; per ordered pair: p2p.
  void prepare() {
    for (Method m : {Method::dma, Method::core})
      if (be_.method_support(m).ok) {
        methods_.push_back(m);
        copiers_[m] = be_.copier(m, {});
      }
    const bool copies = on("bandwidth") || on("direction") || on("devices") || on("duplex") ||
                        on("numa") || on("noise");
    const bool p2p = (on("bandwidth") || on("pairs") || on("noise")) && be_.devices().size() > 1;
    const Bytes n = plan_.size;
    std::map<int, Buffer*> dev_src;
    for (const auto& d : be_.devices()) {
      const int id = d.id;
      try {
        const std::uint64_t host_seed = 0x100 + id, dev_seed = 0x200 + id;
        if (!copies && !p2p) break;
        Buffer& ds = buffer(MemKind::device, id, dev_seed);
        dev_src[id] = &ds;
        if (!copies) continue;
        Buffer& hs = buffer(MemKind::pinned, -1, host_seed);
        Buffer& hd_dst = buffer(MemKind::device, id, std::nullopt);
        Buffer& dh_dst = buffer(MemKind::pinned, -1, std::nullopt);
        Buffer& dd_dst = buffer(MemKind::device, id, std::nullopt);
        for (Method m : methods_) {
          const CopyOp h2d{&hs, &hd_dst, n}, d2h{&ds, &dh_dst, n}, d2d{&ds, &dd_dst, n};
          path_probe({copy_case::h2d, -1, id, m}, h2d, host_seed);
          path_probe({copy_case::d2h, id, -1, m}, d2h, dev_seed);
          path_probe({copy_case::d2d, id, id, m}, d2d, dev_seed);
          if (m == Method::dma && on("duplex"))
            duplex_[id] = &probe(fmt::format("duplex device {} dma", id), m, {h2d, d2h},
                                 {host_seed, dev_seed});
        }
        if (on("numa") && copiers_.count(Method::dma)) {
          try {
            buffers_.push_back(be_.allocate_pinned_near(id, n));
            fill_buffer(be_, *buffers_.back(), n, host_seed);  // writes what h2d writes
            near_[id] = &probe(fmt::format("near h2d device {} dma", id), Method::dma,
                               {{buffers_.back().get(), &hd_dst, n}}, {host_seed});
          } catch (const NotSupported& e) {
            unrun_.push_back({"numa", fmt::format("h2d device {} dma", id), Verdict::none, 0, 0,
                              "GB/s", fmt::format("not measured: {}", e.what())});
          }
        }
      } catch (const NotSupported&) {
        throw;
      } catch (const std::exception& e) {
        unrun_.push_back({"bandwidth", fmt::format("device {}", id), Verdict::warn, 0, 0, "GB/s",
                          fmt::format("did not run: {}", e.what())});
      }
    }
    if (p2p)
      for (const auto& [a, src] : dev_src)
        for (const auto& [b, unused] : dev_src) {
          if (a == b || !be_.peer_access(a, b).ok) continue;
          try {
            Buffer& dst = buffer(MemKind::device, b, std::nullopt);
            for (Method m : methods_) path_probe({copy_case::p2p, a, b, m}, {src, &dst, n}, 0x200ULL + a);
          } catch (const std::exception& e) {
            unrun_.push_back({"pairs", fmt::format("p2p {}->{}", a, b), Verdict::warn, 0, 0,
                              "GB/s", fmt::format("did not run: {}", e.what())});
          }
        }
    if (on("bandwidth")) bandwidth();
    if (on("direction")) directions();
    if (on("duplex")) duplex();
    if (on("numa")) numa();
    if (on("devices")) devices();
    if (on("pairs")) pairs();
  }

  void path_probe(const Path& path, const CopyOp& op, std::uint64_t seed) {
    paths_.emplace_back(path, &probe(path.where(), path.method, {op}, {seed}));
  }
  Probe* find(const std::string& kase, int src, int dst, Method m) const {
    for (const auto& [p, probe] : paths_)
      if (p.kase == kase && p.src == src && p.dst == dst && p.method == m) return probe;
    return nullptr;
  }
  Probe* find_dev(const std::string& kase, int dev, Method m) const {
    return find(kase, kase == copy_case::h2d ? -1 : dev, kase == copy_case::d2h ? -1 : dev, m);
  }

  // The measurement: every probe in interleaved rounds until the verdicts
  // are settled or the budget is spent, then every destination checked.
  void measure() {
    std::vector<Probe*> all;
    for (Probe& p : probes_) all.push_back(&p);
    std::vector<const PairedCheck*> cs;
    for (const PairedCheck& c : comparisons_) cs.push_back(&c);
    if (progress_ && !all.empty()) progress_(0, 1, fmt::format("{} probes in rounds", all.size()));
    const LoadMeter meter;
    rounds_ = settle(all, cs, plan_.budget());
    load_ = meter.stop();
    for (const auto& [dst, seed] : checked_)
      if (const auto bad = verify_buffer(be_, *dst, plan_.size, seed)) {
        std::vector<std::string> who;
        for (const Probe& p : probes_)
          for (const CopyOp& op : p.ops)
            if (op.dst == dst) who.push_back(p.label);
        unrun_.push_back({"bandwidth", who.empty() ? "-" : who.front(), Verdict::fail, 0, 0,
                          "GB/s",
                          fmt::format("the copy delivered wrong data: first wrong byte at offset "
                                      "{} (written by {})",
                                      *bad, fmt::join(who, ", "))});
      }
    if (progress_ && !all.empty()) progress_(1, 1, "done");
  }

  // A comparison's row; a FAIL is measured again on fresh rounds of its own
  // probes and stays FAIL only when it fails again.
  Finding finding(const PairedCheck& c, Judged j) {
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
        f.why = fmt::format("did not reproduce: {:.0f} % at first, {:.0f} % measured again ({}): "
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
      f.why = fmt::format("could not judge: the node was busy ({}; {:.0f} to {:.0f} % over {} "
                          "rounds); {}",
                          busy_text(j.worst_cv, load_), j.judgement.ratio.lo * 100,
                          j.judgement.ratio.hi * 100, j.judgement.rounds, f.why);
    return f;
  }

  // ---- the comparisons, one per row ----

  // What a copy should give, and why; 0 with the reason where nothing says.
  std::pair<double, std::string> expected(const Path& p) const {
    if (be_.name() == "host") {
      if (p.kase == copy_case::p2p)
        return {0, "no expected figure for host p2p: compared with the other pairs instead"};
      return {reference_,
              fmt::format("host memory reference: memcpy of {} on all {} cores, best of 5",
                          format_size(plan_.size), online_cores())};
    }
    const LinkFacts f = be_.link_facts(p.device());
    if (p.kase == copy_case::h2d || p.kase == copy_case::d2h) {
      const auto raw = pcie_raw_gbps(f);
      if (!raw)
        return {0, fmt::format("no expected figure: the {} backend does not report this device's "
                               "PCIe link here",
                               be_.name())};
      return {*raw * kPcieEfficiency,
              fmt::format("PCIe {} ({:.1f} GB/s raw per direction) x {:.2f} efficiency",
                          pcie_text(f), *raw, kPcieEfficiency)};
    }
    if (p.kase == copy_case::d2d) {
      if (f.mem_clock_khz <= 0 || f.mem_bus_bits <= 0)
        return {0, "no expected figure: device memory clock and bus width unknown"};
      const double peak = memory_peak_gbps(f.mem_clock_khz, f.mem_bus_bits);
      return {peak / 2 * kMemoryCopyEfficiency,
              fmt::format("device memory {:.0f} GB/s peak ({:.0f} MHz x {} bits, DDR); a copy "
                          "reads and writes: half, x {:.2f} efficiency",
                          peak, f.mem_clock_khz / 1e3, f.mem_bus_bits, kMemoryCopyEfficiency)};
    }
    return p2p_expected(p);
  }

  // A pair over NVLink: its links x the per-link rate of the architecture;
  // over PCIe: the slower of the two devices' links.
  std::pair<double, std::string> p2p_expected(const Path& p) const {
    const std::string type = be_.link_type(p.src, p.dst);
    const LinkFacts a = be_.link_facts(p.src), b = be_.link_facts(p.dst);
    if (const auto n = nvlink_count(type)) {
      const double per = nvlink_link_gbps(a.arch_major, a.arch_minor);
      if (per <= 0)
        return {0, fmt::format("no expected figure: {} on an architecture ({}.{}) whose NVLink "
                               "rate is not known here; compared with the other pairs instead",
                               type, a.arch_major, a.arch_minor)};
      return {*n * per * kNvlinkEfficiency,
              fmt::format("{}: {} links x {:g} GB/s per direction (compute {}.{}) x {:.2f} "
                          "efficiency",
                          type, *n, per, a.arch_major, a.arch_minor, kNvlinkEfficiency)};
    }
    if (is_nvlink(type))
      return {0, fmt::format("no expected figure: {}; compared with the other pairs instead",
                             type)};
    const auto ra = pcie_raw_gbps(a), rb = pcie_raw_gbps(b);
    if (!ra || !rb)
      return {0, fmt::format("no expected figure for p2p over {}: the links are not reported; "
                             "compared with the other pairs of its link class instead",
                             type.empty() ? std::string("this path") : type)};
    const double raw = std::min(*ra, *rb);
    return {raw * kPcieEfficiency,
            fmt::format("{}: the slower of the two PCIe links ({:.1f} GB/s raw per direction) x "
                        "{:.2f} efficiency",
                        type, raw, kPcieEfficiency)};
  }

  // Host copies run on fewer workers than the reference's cores: a looser grade.
  Grade expected_grade() const {
    return be_.name() == "host" ? Grade{0.3, 0.1} : Grade{};
  }

  // Every path against what its link should give.
  void bandwidth() {
    // In the order copy reports them: by case, then device or pair, then method.
    std::vector<std::pair<Path, Probe*>> order = paths_;
    const auto rank = [](const Path& p) {
      return std::tuple(p.kase == copy_case::h2d ? 0 : p.kase == copy_case::d2h ? 1 : p.kase == copy_case::d2d ? 2 : 3,
                        p.src, p.dst);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
    for (const auto& [p, probe] : order) {
      auto [exp, why] = expected(p);
      PairedCheck c{"bandwidth", p.where(), "GB/s", expected_grade(), {probe},
                   [probe, exp = exp](std::size_t i) { return std::pair(probe->sample(0, i), exp); },
                   {}};
      c.reference_only = !(exp > 0);
      c.why = [why = why](Verdict v, double, double, double ratio) {
        return v == Verdict::pass || v == Verdict::none
                   ? why
                   : fmt::format("{:.0f} % of expected ({}); look at the link, its NUMA "
                                 "placement and what else runs",
                                 ratio * 100, why);
      };
      comparisons_.push_back(std::move(c));
    }
  }

  // h2d against d2h of each device and method, the slower one measured.
  void directions() {
    for (const auto& d : be_.devices())
      for (Method m : methods_) {
        Probe* h = find_dev(copy_case::h2d, d.id, m);
        Probe* b = find_dev(copy_case::d2h, d.id, m);
        if (!h || !b) continue;
        const int id = d.id;
        comparisons_.push_back(
            {"direction", fmt::format("device {} {}", id, to_string(m)), "GB/s", Grade{}, {h, b},
             [h, b](std::size_t i) {
               const double x = h->sample(0, i), y = b->sample(0, i);
               return std::pair(std::min(x, y), std::max(x, y));
             },
             [h, b, id](Verdict v, double, double, double ratio) {
               if (v == Verdict::pass) return std::string("h2d and d2h within 20 %");
               const bool h_slow = median_interval(h->gbps[0]).median <
                                   median_interval(b->gbps[0]).median;
               return fmt::format("{} is {:.0f} % below {} on device {}: one direction of its "
                                  "link or its DMA engine is slow",
                                  h_slow ? copy_case::h2d : copy_case::d2h, (1 - ratio) * 100,
                                  h_slow ? copy_case::d2h : copy_case::h2d, id);
             }});
      }
  }

  // h2d and d2h at once on each device, against the two alone.
  void duplex() {
    for (const auto& [id, both] : duplex_) {
      Probe* h = find_dev(copy_case::h2d, id, Method::dma);
      Probe* b = find_dev(copy_case::d2h, id, Method::dma);
      PairedCheck c{"duplex", fmt::format("device {} h2d+d2h dma", id), "GB/s", Grade{0.7, 0.4},
                   {both, h, b},
                   [both, h, b](std::size_t i) {
                     return std::pair(both->sum(i), h->sample(0, i) + b->sample(0, i));
                   },
                   {}};
      const Probe* at_once = both;
      c.reference_only = be_.name() == "host";
      c.why = [at_once, host = c.reference_only](Verdict v, double, double, double ratio) {
        const double x = median_interval(at_once->gbps[0]).median,
                     y = median_interval(at_once->gbps[1]).median;
        if (host)
          return fmt::format("for reference: both directions share host memory here (h2d {:.2f} "
                             "+ d2h {:.2f} GB/s at once)",
                             x, y);
        return v == Verdict::pass
                   ? std::string("both directions at once add up: the link runs full duplex")
                   : fmt::format("h2d {:.2f} + d2h {:.2f} GB/s at once reach {:.0f} % of the two "
                                 "alone: the link or the copy engines do not run both directions "
                                 "together",
                                 x, y, ratio * 100);
      };
      comparisons_.push_back(std::move(c));
    }
  }

  // The default pinned allocation against pinned memory on each device's
  // own NUMA node: a buffer on the far node costs bandwidth.
  void numa() {
    for (const auto& [id, near] : near_) {
      Probe* dflt = find_dev(copy_case::h2d, id, Method::dma);
      const int node = be_.devices()[static_cast<std::size_t>(id)].numa;
      comparisons_.push_back(
          {"numa", fmt::format("h2d device {} dma", id), "GB/s", Grade{}, {dflt, near},
           [dflt, near](std::size_t i) { return std::pair(dflt->sample(0, i), near->sample(0, i)); },
           [node](Verdict v, double, double, double ratio) {
             return v == Verdict::pass
                        ? fmt::format("the default pinned buffer does as well as one on the "
                                      "device's NUMA node ({})",
                                      node)
                        : fmt::format("the default pinned buffer reaches {:.0f} % of one on the "
                                      "device's NUMA node {}: it is misplaced (bind it there: "
                                      "numactl --membind={} or the allocator's NUMA option)",
                                      ratio * 100, node, node);
           }});
    }
  }

  // Members of a group against the group, round by round: each one's sample
  // against the reference of that round's samples (peer_reference).
  void peers(const std::string& check, const std::vector<Probe*>& group,
             const std::function<std::string(const Probe&, Verdict, double)>& why) {
    for (Probe* self : group) {
      comparisons_.push_back({check, self->label, "GB/s", Grade{}, group,
                              [self, group](std::size_t i) {
                                std::vector<double> v;
                                for (const Probe* p : group) v.push_back(p->sample(0, i));
                                return std::pair(self->sample(0, i), peer_reference(v));
                              },
                              [self, why](Verdict v, double, double, double ratio) {
                                return why(*self, v, ratio);
                              }});
    }
  }

  // Devices against each other, per case and method.
  void devices() {
    if (be_.devices().size() < 2) {
      unrun_.push_back({"devices", "all", Verdict::none, 0, 0, "", "one device: no peers to compare"});
      return;
    }
    for (const char* kase : {copy_case::h2d, copy_case::d2h, copy_case::d2d})
      for (Method m : methods_) {
        std::vector<Probe*> group;
        for (const auto& d : be_.devices())
          if (Probe* p = find_dev(kase, d.id, m)) group.push_back(p);
        if (group.size() < 2) continue;
        const std::size_t n = group.size();
        peers("devices", group, [this, n](const Probe& p, Verdict v, double ratio) {
          return v == Verdict::pass
                     ? fmt::format("within 20 % of its peers ({} devices)", n)
                     : fmt::format("device {} is at {:.0f} % of its peers' {}: this device or its "
                                   "slot is slow",
                                   path_of(p).device(), ratio * 100, n >= 3 ? "median" : "best");
        });
      }
  }

  // p2p pairs against the pairs of the same link class.
  void pairs() {
    std::map<std::string, std::vector<Probe*>> classes;
    for (const auto& [path, p] : paths_) {
      if (path.kase == copy_case::p2p)
        classes[fmt::format("{} {}", be_.link_type(path.src, path.dst), to_string(path.method))]
            .push_back(p);
    }
    if (classes.empty()) {
      unrun_.push_back({"pairs", "all", Verdict::none, 0, 0, "",
                        "no p2p pairs measured (one device, or none can reach another)"});
      return;
    }
    for (const auto& [cls, group] : classes) {
      if (group.size() < 2) {
        Probe* only = group[0];
        PairedCheck c{"pairs", only->label, "GB/s", Grade{}, {only},
                     [only](std::size_t i) { return std::pair(only->sample(0, i), 0.0); },
                     [cls = cls](Verdict, double, double, double) {
                       return fmt::format("the only pair of its class ({})", cls);
                     }};
        c.reference_only = true;
        comparisons_.push_back(std::move(c));
        continue;
      }
      const std::size_t n = group.size();
      peers("pairs", group, [this, n, cls = cls](const Probe& p, Verdict v, double ratio) {
        const Path path = path_of(p);
        return v == Verdict::pass
                   ? fmt::format("within 20 % of the {} pairs of its class ({})", n, cls)
                   : fmt::format("{:.0f} % of the pairs of its class ({}): look at devices {} and "
                                 "{} and the link between them",
                                 ratio * 100, cls, path.src, path.dst);
      });
    }
  }

  Path path_of(const Probe& probe) const {
    for (const auto& [p, q] : paths_)
      if (q == &probe) return p;
    return {};
  }

  // ---- checks that are not comparisons ----

  void links() {
    for (const auto& d : be_.devices()) {
      const LinkFacts f = be_.link_facts(d.id);
      const auto cur = parse_link_speed(f.pcie_current_speed);
      const auto max = parse_link_speed(f.pcie_max_speed);
      Finding row{"link", fmt::format("device {} PCIe", d.id), Verdict::none, 0, 0,
                  "GB/s raw", ""};
      if (!cur || !max || f.pcie_width <= 0 || f.pcie_max_width <= 0) {
        row.why = be_.name() == "host"
                      ? "no PCIe link: the host backend's devices are NUMA nodes"
                      : fmt::format("PCIe link not reported ({})",
                                    f.source.empty() ? be_.name() : f.source);
        add(row);
        continue;
      }
      row.measured = pcie_lane_gbps(*cur) * f.pcie_width;
      row.expected = pcie_lane_gbps(*max) * f.pcie_max_width;
      const bool below = *cur < *max || f.pcie_width < f.pcie_max_width;
      row.verdict = below ? Verdict::warn : Verdict::pass;
      row.why = below ? fmt::format("trained at {} x{}, below its maximum {} x{}: reseat the card, "
                                    "check the slot and BIOS link settings (or it idles in a "
                                    "power-saving state: re-check under load)",
                                    pcie_generation(*cur), f.pcie_width, pcie_generation(*max),
                                    f.pcie_max_width)
                      : fmt::format("{} x{} as its maximum", pcie_generation(*cur), f.pcie_width);
      add(row);
    }
  }

  void latency() {
    CopyConfig cfg;
    cfg.cases = {copy_case::h2d};
    cfg.methods = {Method::dma};
    cfg.sizes = {4096};
    cfg.iters = 20;
    cfg.warmup = 5;
    cfg.device = 0;
    Registry reg;
    register_copy(reg);
    for (const Record& r : run_copy(be_, reg, cfg))
      if (r.status == Status::ok)
        add({"latency", fmt::format("h2d 4 KiB device {} dma", r.dst), Verdict::none,
             r.time_us.median, 0, "us",
             "for reference (no expected figure: start-up of the copy path, not link speed)"});
  }

  // The engine's lanes to remote servers (one per --nic, or one per server),
  // each run every loop together with the others: a row per lane, held
  // against its peers and its NIC's line rate (judge_engine_lanes).
  void engine_lanes() {
    const DoctorEngineTarget& t = engine_target_;
    EngineClientConfig cfg;
    cfg.ops = {engine::Op::read};
    cfg.block = 1ULL << 20;
    cfg.nics = t.nics;
    const std::size_t servers = t.servers.size();
    cfg.lanes = servers > 1 && t.nics.size() == servers ? 1 : std::max<int>(1, static_cast<int>(t.nics.size()));
    const Bytes parts = static_cast<Bytes>(cfg.lanes) * servers;
    const Bytes per_part = std::max<Bytes>(plan_.size / parts / cfg.block, 4) * cfg.block;
    cfg.total = per_part * parts;
    cfg.loops = std::max(plan_.iters, 10);
    cfg.warmup = 1;
    cfg.journal = false;
    cfg.peer_errors = true;  // another host: a lost server fails its lane, never hangs
    cfg.timeout_s = 10;
    try {
      auto host = make_backend("host");
      std::vector<std::unique_ptr<engine::ServerLink>> links;
      std::vector<EngineServer> targets;
      for (const auto& [h, port] : t.servers) {
        links.push_back(std::make_unique<engine::ServerLink>(h, port, t.token, engine_digest(cfg),
                                                             "host", 10, 10));
        targets.push_back({links.back().get(), fmt::format("{}:{}", h, port)});
      }
      EngineRun run = run_engine_client(targets, cfg, 0, *host);
      for (auto& l : links) l->bye();
      std::vector<EngineLaneFigures> lanes;
      for (std::size_t i = 0; i < run.records.size(); ++i) {
        const Record& r = run.records[i];
        const auto server = r.get(engine_field::server).value_or("");
        const auto lane = r.get(engine_field::lane_id).value_or(-1);
        if (server == "all" || (cfg.lanes > 1 && lane < 0)) continue;  // sums
        const std::string nic = r.get(engine_field::nic).value_or("");
        std::string where = lane >= 0 ? fmt::format("lane {} to {}", lane, server) : "lane to " + server;
        if (!nic.empty()) where += fmt::format(" (nic {})", nic);
        if (r.status != Status::ok) {
          add({"engine", where, Verdict::fail, 0, 0, "GB/s", fmt::format("the lane failed: {}", r.reason)});
          continue;
        }
        EngineLaneFigures f{where, nic, nic.empty() ? 0 : nic_line_gbps(nic), {}};
        for (const double us : run.loops_us[i])
          f.gbps.push_back(us > 0 ? static_cast<double>(r.bytes) / us / 1e3 : 0);
        lanes.push_back(std::move(f));
      }
      for (Finding& f : judge_engine_lanes(lanes)) add(f);
    } catch (const std::exception& e) {
      add({"engine", "lanes", Verdict::warn, 0, 0, "GB/s",
           fmt::format("the engine's lanes did not run: {}", e.what())});
    }
  }

  // The engine on loopback against memcpy; a FAIL must reproduce on a
  // second selftest.
  void engine() {
    if (!engine_target_.servers.empty()) return engine_lanes();
    EngineClientConfig cfg;
    cfg.ops = {engine::Op::read};
    cfg.total = std::min<Bytes>(plan_.size, 16ULL << 20);
    cfg.block = 4ULL << 20;
    cfg.loops = plan_.iters;
    cfg.warmup = 1;
    const char* where = "read 4 MiB loopback";
    try {
      auto host = make_backend("host");
      const auto measure = [&]() -> std::optional<Record> {
        for (const Record& r : engine_selftest(cfg, *host, 0, {false}).records)
          if (r.status == Status::ok) return r;
        return std::nullopt;
      };
      const Grade g{0.25, 0.1};
      const LoadMeter first_meter;
      auto r = measure();
      const CpuLoad first_load = first_meter.stop();
      if (!r) return;
      Verdict v = grade(r->gbps_median / reference_, g.warn_below, g.fail_below);
      std::string again;
      if (v == Verdict::fail) {
        const LoadMeter meter;
        const auto second = measure();
        const CpuLoad load = meter.stop();
        const int cores = online_cores();
        const bool busy = too_busy_to_judge(first_load.other_cores, cores, r->time_us.cv) ||
                          too_busy_to_judge(load.other_cores, cores,
                                            second ? second->time_us.cv : 1.0);
        if (!second || grade(second->gbps_median / reference_, g.warn_below, g.fail_below) !=
                           Verdict::fail) {
          v = Verdict::warn;
          again = fmt::format("did not reproduce: {:.0f} % at first, {:.0f} % measured again "
                              "({}): re-run when the node is quiet",
                              r->gbps_median / reference_ * 100,
                              second ? second->gbps_median / reference_ * 100 : 0.0,
                              busy_text(r->time_us.cv, load));
        } else if (busy) {
          v = Verdict::warn;
          again = fmt::format("could not judge: the node was busy ({}; {:.0f} % of memcpy, "
                              "twice); re-run when it is quiet",
                              busy_text(std::max(r->time_us.cv, second->time_us.cv),
                                        load.other_cores > first_load.other_cores ? load
                                                                                  : first_load),
                              second->gbps_median / reference_ * 100);
        }
        if (second) r = second;
      }
      Finding f{"engine", where, v, r->gbps_median, reference_, "GB/s", ""};
      f.why = !again.empty()         ? again
              : v == Verdict::pass ? std::string("the UCX engine keeps up with memcpy on the cores")
                                   : fmt::format("the UCX engine reaches {:.0f} % of memcpy on the "
                                                 "cores: look at UCX_TLS and the transports UCX "
                                                 "chose",
                                                 f.ratio() * 100);
      add(f);
    } catch (const std::exception& e) {
      add({"engine", where, Verdict::warn, 0, 0, "GB/s",
           fmt::format("the engine selftest did not run: {}", e.what())});
    }
  }

  // Clocks held down by power, thermal, board or reliability limits during
  // the run: the figures above are then below what the links give.
  void clocks(double run_s) {
    for (std::size_t i = 0; i < be_.devices().size() && i < holds_before_.size(); ++i) {
      const int id = be_.devices()[i].id;
      const ClockHolds& b = holds_before_[i];
      const ClockHolds a = be_.clock_holds(id);
      Finding f{"clocks", fmt::format("device {}", id), Verdict::none, 0, 0, "s held", ""};
      if (!b.known || !a.known) {
        f.why = fmt::format("not read: {}", !a.why.empty() ? a.why : b.why);
        add(f);
        continue;
      }
      const auto held = clock_held(b, a);
      if (!held) {
        f.why = "the clock-hold counters went back during the run (driver reloaded): re-run";
        add(f);
        continue;
      }
      f.measured = held->seconds;
      f.verdict = grade_clock_hold(held->seconds, run_s);
      const std::string clock =
          a.sm_max_mhz > 0 ? fmt::format("; SM clock {:.0f} of {:.0f} MHz at the end", a.sm_mhz,
                                         a.sm_max_mhz)
                           : std::string();
      f.why = f.verdict == Verdict::pass
                  ? fmt::format("clocks not held down during the {:.0f} s run{}", run_s, clock)
                  : fmt::format("clocks held down by its {} for {:.1f} s of the {:.0f} s run "
                                "({:.0f} %){}: the figures above are below what its links "
                                "give; check cooling and power limits (nvidia-smi -q -d "
                                "PERFORMANCE)",
                                held->cause, held->seconds, run_s, 100 * held->seconds / run_s,
                                clock);
      add(f);
    }
  }

  // The spread of every measurement over the main rounds, and the load
  // around them: a noisy one held its verdicts to WARN or was measured again.
  std::vector<Finding> noise_rows() const {
    std::vector<Finding> out;
    double worst = 0;
    std::size_t series = 0;
    for (const Probe& p : probes_)
      for (std::size_t k = 0; k < p.ops.size(); ++k) {
        const double cv = p.cv(k);
        ++series;
        worst = std::max(worst, cv);
        if (cv <= kNoiseLimit) continue;
        out.push_back({"noise", p.ops.size() > 1 ? fmt::format("{} {}", p.label, k ? copy_case::d2h : copy_case::h2d)
                                                 : p.label,
                       Verdict::warn, cv * 100, kNoiseLimit * 100, "% CV",
                       fmt::format("the node was busy during this measurement ({} over {} rounds): "
                                   "verdicts that read it were measured again or held to WARN",
                                   busy_text(cv, load_), p.rounds())});
      }
    if (out.empty() && series > 0)
      out.push_back({"noise", "all", Verdict::pass, worst * 100, kNoiseLimit * 100, "% CV",
                     fmt::format("all {} copy measurements under {:.0f} % CV over {} rounds ({})",
                                 series, kNoiseLimit * 100, rounds_, busy_text(worst, load_))});
    return out;
  }

  Backend& be_;
  Plan plan_;
  DoctorEngineTarget engine_target_;
  std::set<std::string> checks_;
  Progress progress_;
  double reference_ = 0;
  std::vector<ClockHolds> holds_before_;
  std::vector<Method> methods_;
  std::map<Method, std::unique_ptr<Copier>> copiers_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::deque<Probe> probes_;                       // stable addresses
  std::vector<std::pair<Path, Probe*>> paths_;     // single-copy probes, in order
  std::map<int, Probe*> duplex_, near_;            // by device
  std::map<const Buffer*, std::uint64_t> checked_;  // destinations and the pattern they get
  std::vector<PairedCheck> comparisons_;
  std::vector<Finding> unrun_, noise_;
  CpuLoad load_;
  int rounds_ = 0;
  std::vector<Finding> findings_;
};

// Runs `mpiexec -n N <this binary> ARGS... --format json -o FILE -q`,
// returns the parsed document, or throws RuntimeError with the reason.
nlohmann::json run_ranked(int ranks, const std::vector<std::string>& args, double timeout_s) {
  char self[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw RuntimeError("cannot find this binary");
  char dir[] = "/tmp/xferbench-doctor-XXXXXX";
  if (!mkdtemp(dir)) throw RuntimeError("cannot make a temporary directory");
  const std::string out = std::string(dir) + "/out.json", err = std::string(dir) + "/err.log";
  const char* launcher = std::getenv("XFERBENCH_MPIEXEC");
  std::vector<std::string> argv = {launcher && *launcher ? launcher : "mpiexec", "-n",
                                   std::to_string(ranks), self};
  argv.insert(argv.end(), args.begin(), args.end());
  for (const char* a : {"--format", "json", "-q", "-o"}) argv.emplace_back(a);
  argv.push_back(out);
  const pid_t pid = fork();
  if (pid < 0) throw RuntimeError("fork failed");
  if (pid == 0) {
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    if (FILE* f = std::freopen(err.c_str(), "w", stderr)) (void)f;
    if (FILE* f = std::freopen("/dev/null", "w", stdout)) (void)f;
    execvp(c[0], c.data());
    _exit(127);
  }
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw RuntimeError(fmt::format("`{}` did not end within {:.0f} s", fmt::join(argv, " "),
                                     timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(out), e(err);
  std::stringstream text, etext;
  text << in.rdbuf();
  etext << e.rdbuf();
  std::remove(out.c_str());
  std::remove(err.c_str());
  rmdir(dir);
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  if (text.str().empty()) {
    std::string why = etext.str();
    while (!why.empty() && why.back() == '\n') why.pop_back();
    if (const auto nl = why.rfind('\n'); nl != std::string::npos) why = why.substr(nl + 1);
    throw RuntimeError(fmt::format("exit {}: {}", rc, why.empty() ? "no output" : why));
  }
  return nlohmann::json::parse(text.str());
}

// With --ranks N: remote get and an allreduce at two sizes across N ranks
// of this host, each run as its own `mpiexec` (so this process stays one).
std::vector<Finding> cross_rank(int ranks, const std::string& backend, double reference) {
  std::vector<Finding> out;
  const struct {
    const char* check;
    std::vector<std::string> args;
  } runs[] = {{"remote", {"remote", "--op", "get", "-b", "64K", "-e", "4M", "-f", "64"}},
              {"allreduce", {"coll", "allreduce", "-b", "64K", "-e", "4M", "-f", "64", "-n",
                             "10", "-w", "3"}}};
  for (const auto& run : runs) {
    std::vector<std::string> args = run.args;
    args.insert(args.end(), {"--backend", backend});
    try {
      const LoadMeter meter;  // the ranks are waited-for children: not "other processes"
      const auto doc = run_ranked(ranks, args, 300);
      const CpuLoad load = meter.stop();
      for (const auto& r : doc.at("results")) {
        const std::string status = r.value("status", "");
        const auto bytes = r.value("bytes", std::uint64_t{0});
        const std::string method = r.value("method", "");
        Finding f{run.check, "", Verdict::none, 0, 0, "GB/s", ""};
        if (std::string(run.check) == "remote") {
          f.where = fmt::format("get {} {} {}->{}", format_size(bytes), method,
                                r.value("src", -1), r.value("dst", -1));
          f.measured = r.contains("gbps") ? r["gbps"].value("median", 0.0) : 0.0;
          if (backend == "host" && bytes >= (1ULL << 20)) {
            f.expected = reference;
            f.verdict = grade(f.ratio(), 0.2, 0.05);
            const double cv = r.contains("time_us") ? r["time_us"].value("cv", 0.0) : 0.0;
            f.why = f.verdict == Verdict::pass
                        ? "a peer rank's window read near memcpy speed (same host)"
                        : fmt::format("{:.0f} % of memcpy on the cores: look at the window's "
                                      "transport (shm or rma) and MPICH's settings",
                                      f.ratio() * 100);
            if (f.verdict == Verdict::fail &&
                too_busy_to_judge(load.other_cores, online_cores(), cv)) {
              f.verdict = Verdict::warn;
              f.why = fmt::format("could not judge: the node was busy ({}); {}",
                                  busy_text(cv, load), f.why);
            }
          } else {
            f.why = "for reference (small transfers, or no expected figure on this backend)";
          }
        } else {
          if (r.value("inplace", false)) continue;
          f.where = fmt::format("allreduce {} {}", format_size(bytes), r.value("dtype", ""));
          f.measured = r.value("busbw", 0.0);
          f.why = fmt::format("busbw for reference ({} ranks, {})", ranks,
                              doc.at("results").size() > 0 ? method : "");
        }
        if (status != "ok") {
          f.verdict = Verdict::fail;
          f.why = fmt::format("{}: {}", status, r.value("reason", ""));
        }
        out.push_back(f);
      }
    } catch (const std::exception& e) {
      out.push_back({run.check, fmt::format("{} ranks", ranks), Verdict::fail, 0, 0, "GB/s",
                     fmt::format("did not run: {}", e.what())});
    }
  }
  return out;
}


class DoctorFamily final : public Family {
 public:
  DoctorFamily() {
    schema_.add(doctor_field::verdict, FieldRole::info, "PASS, WARN, FAIL, or - (nothing to hold it against)")
        .add(doctor_field::measured, FieldRole::metric, "the measured figure, in `unit`")
        .add(doctor_field::expected, FieldRole::metric, "what the link should give; 0: none")
        .add(doctor_field::ratio, FieldRole::metric, "measured / expected")
        .add(doctor_field::unit, FieldRole::info, "GB/s, us, % CV")
        .add(doctor_field::why, FieldRole::info, "one sentence: why, and where to look")
        .headline(doctor_field::ratio);
  }
  std::string name() const override { return "doctor"; }
  std::string summary() const override {
    return "measure every path, hold it against its link, name what is wrong";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override {
    r.add({"doctor.checks", "doctor",
           "copies per device and method, p2p, latency, engine: verdicts against the topology",
           [](const Capabilities&) { return Support::yes(); }});
  }
  std::string table_note(const Report& r) const override {
    std::string note =
        "each row: a check, where, its verdict, the measured figure against what the link should "
        "give (README: doctor); exit 1 when a row fails\n";
    if (const FieldValue* v = find_field(r.params, "reference_gbps");
        v && std::holds_alternative<double>(*v))
      note += fmt::format("host memory reference (memcpy on all cores): {:.2f} GB/s\n",
                          std::get<double>(*v));
    return note;
  }
  std::string tables(const Report& r) const override {
    std::string out = fmt::format("\n{:<10} {:<24} {:<7} {:>10} {:>10} {:>7}  {}\n", "Check",
                                  "Where", "Verdict", "Measured", "Expected", "Ratio", "Why");
    int counts[4] = {0, 0, 0, 0};
    for (const Record& rec : r.results) {
      const std::string v = rec.get_or(doctor_field::verdict, std::string("-"));
      const double exp = rec.get_or(doctor_field::expected, 0.0);
      counts[v == "PASS" ? 0 : v == "WARN" ? 1 : v == "FAIL" ? 2 : 3]++;
      out += fmt::format("{:<10} {:<24} {:<7} {:>10.2f} {:>10} {:>7}  {}\n", rec.kase, rec.method,
                         v, rec.get_or(doctor_field::measured, 0.0),
                         exp > 0 ? fmt::format("{:.2f}", exp) : std::string("-"),
                         exp > 0 ? fmt::format("{:.2f}", rec.get_or(doctor_field::ratio, 0.0))
                                 : std::string("-"),
                         rec.get_or(doctor_field::why, std::string()));
    }
    out += fmt::format("\nverdicts: {} PASS, {} WARN, {} FAIL, {} without an expected figure\n",
                       counts[0], counts[1], counts[2], counts[3]);
    return out;
  }

  // One gauge family per figure, a sample per check with its labels; the
  // verdict as a number (0 PASS, 1 WARN, 2 FAIL, -1 none) and as a label.
  std::string prometheus(const Report& r) const override {
    const auto esc = [](const std::string& v) {
      std::string o;
      for (char c : v) o += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
      return o;
    };
    const std::string common =
        fmt::format("backend=\"{}\",host=\"{}\"", esc(r.env.backend), esc(r.env.host));
    std::string out;
    const auto family = [&](const char* name, const char* help,
                            const std::function<double(const Record&)>& value,
                            bool with_verdict) {
      out += fmt::format("# HELP xferbench_doctor_{} {}\n# TYPE xferbench_doctor_{} gauge\n", name,
                         help, name);
      for (const Record& rec : r.results) {
        const std::string v = rec.get_or(doctor_field::verdict, std::string("-"));
        out += fmt::format("xferbench_doctor_{}{{check=\"{}\",where=\"{}\",unit=\"{}\",{}{}}} {}\n",
                           name, esc(rec.kase), esc(rec.method),
                           esc(rec.get_or(doctor_field::unit, std::string())), common,
                           with_verdict ? fmt::format(",verdict=\"{}\"", esc(v)) : "",
                           value(rec));
      }
    };
    family("measured", "the measured figure of a check, in its unit",
           [](const Record& x) { return x.get_or(doctor_field::measured, 0.0); }, false);
    family("expected", "what the link should give, in the check's unit; 0: no expected figure",
           [](const Record& x) { return x.get_or(doctor_field::expected, 0.0); }, false);
    family("ratio", "measured / expected; 0: no expected figure",
           [](const Record& x) { return x.get_or(doctor_field::ratio, 0.0); }, false);
    family("verdict", "0 PASS, 1 WARN, 2 FAIL, -1 nothing to hold it against",
           [](const Record& x) {
             const std::string v = x.get_or(doctor_field::verdict, std::string("-"));
             return v == "PASS" ? 0.0 : v == "WARN" ? 1.0 : v == "FAIL" ? 2.0 : -1.0;
           },
           true);
    int fails = 0;
    for (const Record& rec : r.results) fails += rec.status == Status::failed;
    out += fmt::format(
        "# HELP xferbench_doctor_failed_checks checks with the verdict FAIL\n"
        "# TYPE xferbench_doctor_failed_checks gauge\n"
        "xferbench_doctor_failed_checks{{{}}} {}\n"
        "# HELP xferbench_doctor_run_timestamp_seconds when this doctor run ended (Unix time)\n"
        "# TYPE xferbench_doctor_run_timestamp_seconds gauge\n"
        "xferbench_doctor_run_timestamp_seconds{{{}}} {}\n",
        common, fails, common, static_cast<long long>(std::time(nullptr)));
    return out;
  }

  void add_options(CLI::App& app) override {
    auto* q = app.add_flag("--quick", quick_, "a short suite (16 MiB, 5 rounds and more while noisy: seconds)");
    auto* f = app.add_flag("--full", full_, "a long suite (256 MiB, 10 rounds and more while noisy)");
    q->excludes(f);
    app.add_option("--checks", checks_,
                   fmt::format("comma list of checks to run (default all): {}",
                               fmt::join(kChecks, ", ")));
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
    RunOpts which;
    which.ranks = true;
    which.prom = true;
    add_run_options(app, run_, which);
    app.footer(R"(Measures h2d, d2h and d2d per device with both methods, the p2p matrix, a 4 KiB
latency and the engine on loopback, then holds each figure against what its
link should give: PCIe generation x width (sysfs), device memory clock x bus
width, NVLink count x per-link rate (NVML), the host's memcpy on all cores;
compares directions, devices and pairs of one link class; flags noisy
measurements and clocks held down by power or thermal limits (NVML). Exit 1
when a check fails.
On a busy node: every comparison is measured in interleaved rounds and
judged on the ratio of each round; a verdict noise could change gets more
rounds (up to 3x the first ones' time, --quick 2x), then is at most WARN
("could not judge"), and a FAIL is measured again and must fail again.
Examples:
  xferbench doctor
  xferbench doctor --quick --format json -o doctor.json
  xferbench doctor --quick -q --format prom -o /var/lib/node_exporter/textfile/xferbench.prom
  xferbench doctor --backend cuda --checks bandwidth,link,direction
  xferbench doctor --ranks 2        # also remote get and an allreduce across 2 ranks
  xferbench doctor --checks engine --engine-server 10.0.0.2:20000 --nic eth0,eth1 --token-file tok)");
  }

  int run(const Invocation&) override {
    std::set<std::string> checks(kChecks.begin(), kChecks.end());
    if (launched_by_mpiexec())
      throw UsageError("doctor runs as one process: give --ranks N instead of mpiexec");
    if (run_.ranks == 1) throw UsageError("--ranks 1: the cross-rank checks need at least 2");
    if (!checks_.empty()) {
      checks.clear();
      for (const auto& c : split_list(checks_)) {
        if (std::find(kChecks.begin(), kChecks.end(), c) == kChecks.end())
          throw UsageError(fmt::format("--checks: unknown check '{}' ({})", c,
                                       fmt::join(kChecks, ", ")));
        checks.insert(c);
      }
      if (checks.empty()) throw UsageError("--checks needs at least one check");
    }
    const Plan plan = plan_of(quick_, full_);
    DoctorEngineTarget target;
    if (!engine_nics_.empty() && engine_servers_.empty())
      throw UsageError("--nic: give the engine servers its lanes go to (--engine-server)");
    if (!engine_servers_.empty()) {
      target.servers = parse_engine_servers(engine_servers_);
      if (!engine_nics_.empty())
        for (const auto& n : option_list("--nic", engine_nics_, "eth0,eth1")) {
          check_engine_nic(n);
          target.nics.push_back(n);
        }
      target.token = engine::load_token(engine_token_file_);
      if (target.token.empty())
        throw UsageError("--engine-server: give the servers' token (--token-file or XFERBENCH_TOKEN)");
    }
    ChosenBackend chosen = choose_backend(*this, run_.backend, nullptr);
    Backend& be = *chosen.backend;
    Output out(run_);
    Doctor doc(be, plan, checks, progress_for(run_));
    doc.set_engine_target(std::move(target));
    std::vector<Finding> findings = doc.run();
    if (run_.ranks > 1) {
      for (auto& f : cross_rank(run_.ranks, be.name(), doc.reference())) findings.push_back(f);
    } else if (run_.ranks == 0) {
      findings.push_back({"ranks", "-", Verdict::none, 0, 0, "",
                          "remote get and allreduce not run: give --ranks N (N >= 2)"});
    }
    Report report{"doctor", env_of(be),
                  {{"depth", plan.depth},
                   {"size", static_cast<std::int64_t>(plan.size)},
                   {"iters", std::int64_t{plan.iters}},
                   {"checks", checks_.empty() ? std::string("all") : checks_},
                   {"reference_gbps", doc.reference()},
                   {"rounds", std::int64_t{doc.rounds()}},
                   {"other_cores", doc.load().other_cores}},
                  {},
                  {}};
    for (const Finding& f : findings) report.results.push_back(finding_record(f, plan.size));
    return report_once(*this, std::move(report), run_, out);
  }

 private:
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


std::vector<Finding> doctor_census(Backend& backend, const Progress& progress) {
  const std::set<std::string> checks = {"bandwidth", "link", "direction", "duplex",
                                        "numa",      "devices", "pairs"};
  Doctor doc(backend, plan_of(true, false), checks, progress);
  return doc.run();
}

}  // namespace xb
