// `xferbench doctor`: measures every path of the machine on one backend,
// holds each figure against what its link should give, and names what is
// wrong (seed 001: labels lie, measure).
#include "family/doctor/doctor_family.hpp"

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <cstring>
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
#include "family/engine/engine_bench.hpp"
#include "family/run.hpp"
#include "report/table_kit.hpp"
#include "runtime/runtime.hpp"

namespace xb {
namespace {

namespace doctor_field {
inline constexpr FieldKey<std::string> verdict{"verdict"};
inline constexpr FieldKey<double> measured{"measured"};
inline constexpr FieldKey<double> expected{"expected"};
inline constexpr FieldKey<double> ratio{"ratio"};
inline constexpr FieldKey<std::string> unit{"unit"};
inline constexpr FieldKey<std::string> why{"why"};
}  // namespace doctor_field

const std::vector<std::string> kChecks = {"bandwidth", "link",    "direction", "duplex",
                                          "numa",      "devices", "pairs",     "latency",
                                          "engine",    "noise",   "clocks"};

struct Plan {
  std::string depth = "default";  // quick, default, full
  Bytes size = 64ULL << 20;
  int iters = 5, warmup = 2;
};

Plan plan_of(bool quick, bool full) {
  if (quick) return {"quick", 16ULL << 20, 5, 1};
  if (full) return {"full", 256ULL << 20, 10, 3};
  return {};
}

// A device's PCIe link as it trained: raw GB/s per direction, if reported.
std::optional<double> pcie_raw_gbps(const LinkFacts& f) {
  const auto gts = parse_link_speed(f.pcie_current_speed);
  if (!gts || f.pcie_width <= 0) return std::nullopt;
  return pcie_lane_gbps(*gts) * f.pcie_width;
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

std::string where_of(const Record& r) {
  if (r.kase == "p2p" || r.kase == "p2p_bidir")
    return fmt::format("{} {}->{} {}", r.kase, r.src, r.dst, r.method);
  const int dev = r.kase == "d2h" || r.kase == "d2d" ? r.src : r.dst;
  return fmt::format("{} device {} {}", r.kase, dev, r.method);
}

int device_of(const Record& r) { return r.kase == "h2d" ? r.dst : r.src; }

class Doctor {
 public:
  Doctor(Backend& be, const Plan& plan, const std::set<std::string>& checks,
         const Progress& progress)
      : be_(be), plan_(plan), checks_(checks), progress_(progress) {}

  std::vector<Finding> run() {
    const double t0 = now_s();
    if (on("clocks"))
      for (const auto& d : be_.devices()) holds_before_.push_back(be_.clock_holds(d.id));
    reference_ = memcpy_reference(plan_.size, online_cores());
    measure_copies();
    if (on("bandwidth")) bandwidth();
    if (on("link")) links();
    if (on("direction")) directions();
    if (on("duplex")) duplex();
    if (on("numa")) numa();
    if (on("devices")) devices();
    if (on("pairs")) pairs();
    if (on("latency")) latency();
    if (on("engine")) engine();
    if (on("noise")) noise();
    if (on("clocks")) clocks(now_s() - t0);
    return findings_;
  }
  double reference() const { return reference_; }

 private:
  bool on(const std::string& c) const { return checks_.count(c) > 0; }

  void measure_copies() {
    CopyConfig cfg;
    cfg.cases = {CopyCase::h2d, CopyCase::d2h, CopyCase::d2d};
    if (be_.devices().size() > 1) cfg.cases.push_back(CopyCase::p2p);
    cfg.methods.clear();
    for (Method m : {Method::dma, Method::core})
      if (be_.method_support(m).ok) cfg.methods.push_back(m);
    cfg.sizes = {plan_.size};
    cfg.p2p_sizes = {plan_.size};
    cfg.iters = plan_.iters;
    cfg.p2p_iters = plan_.iters;
    cfg.warmup = plan_.warmup;
    Registry reg;
    register_copy(reg);
    validate_copy(be_, cfg);
    copies_ = run_copy(be_, reg, cfg, progress_);
  }

  // What a copy should give, and why; 0 with the reason where nothing says.
  std::pair<double, std::string> expected(const Record& r) const {
    if (be_.name() == "host") {
      if (r.kase == "p2p" || r.kase == "p2p_bidir")
        return {0, "no expected figure for host p2p: compared with the other pairs instead"};
      return {reference_,
              fmt::format("host memory reference: memcpy of {} on all {} cores, best of 5",
                          format_size(plan_.size), online_cores())};
    }
    const LinkFacts f = be_.link_facts(device_of(r));
    if (r.kase == "h2d" || r.kase == "d2h") {
      const auto raw = pcie_raw_gbps(f);
      if (!raw)
        return {0, fmt::format("no expected figure: the {} backend does not report this device's "
                               "PCIe link here",
                               be_.name())};
      return {*raw * kPcieEfficiency,
              fmt::format("PCIe {} x{} ({:.1f} GB/s raw per direction) x {:.2f} efficiency",
                          pcie_generation(*parse_link_speed(f.pcie_current_speed)), f.pcie_width,
                          *raw, kPcieEfficiency)};
    }
    if (r.kase == "d2d") {
      if (f.mem_clock_khz <= 0 || f.mem_bus_bits <= 0)
        return {0, "no expected figure: device memory clock and bus width unknown"};
      const double peak = memory_peak_gbps(f.mem_clock_khz, f.mem_bus_bits);
      return {peak / 2 * kMemoryCopyEfficiency,
              fmt::format("device memory {:.0f} GB/s peak ({:.0f} MHz x {} bits, DDR); a copy "
                          "reads and writes: half, x {:.2f} efficiency",
                          peak, f.mem_clock_khz / 1e3, f.mem_bus_bits, kMemoryCopyEfficiency)};
    }
    return p2p_expected(r);
  }

  // A pair over NVLink: its links x the per-link rate of the architecture;
  // over PCIe: the slower of the two devices' links.
  std::pair<double, std::string> p2p_expected(const Record& r) const {
    const std::string type = be_.link_type(r.src, r.dst);
    const LinkFacts a = be_.link_facts(r.src), b = be_.link_facts(r.dst);
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
  Verdict grade_expected(double ratio) const {
    return be_.name() == "host" ? grade(ratio, 0.3, 0.1) : grade(ratio);
  }

  void add(Finding f) { findings_.push_back(std::move(f)); }

  void bandwidth() {
    for (const Record& r : copies_) {
      if (r.status != Status::ok || r.kase == "p2p_bidir") continue;
      auto [exp, why] = expected(r);
      Finding f{"bandwidth", where_of(r), Verdict::none, r.gbps_median, exp, "GB/s", why};
      if (exp > 0) {
        f.verdict = grade_expected(f.ratio());
        if (f.verdict != Verdict::pass)
          f.why = fmt::format("{:.0f} % of expected ({}); look at the link, its NUMA placement "
                              "and what else runs",
                              f.ratio() * 100, why);
      }
      add(f);
    }
  }

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

  const Record* find(const std::string& kase, int dev, const std::string& method) const {
    for (const Record& r : copies_)
      if (r.kase == kase && r.method == method && r.status == Status::ok && device_of(r) == dev)
        return &r;
    return nullptr;
  }

  void directions() {
    for (const auto& d : be_.devices())
      for (const char* m : {"dma", "core"}) {
        const Record* h = find("h2d", d.id, m);
        const Record* b = find("d2h", d.id, m);
        if (!h || !b) continue;
        const double lo = std::min(h->gbps_median, b->gbps_median),
                     hi = std::max(h->gbps_median, b->gbps_median);
        Finding f{"direction", fmt::format("device {} {}", d.id, m), Verdict::none, lo, hi,
                  "GB/s", ""};
        f.verdict = grade(f.ratio());
        const char* slow = h->gbps_median < b->gbps_median ? "h2d" : "d2h";
        const char* fast = h->gbps_median < b->gbps_median ? "d2h" : "h2d";
        f.why = f.verdict == Verdict::pass
                    ? "h2d and d2h within 20 %"
                    : fmt::format("{} is {:.0f} % below {} on device {}: one direction of its "
                                  "link or its DMA engine is slow",
                                  slow, (1 - f.ratio()) * 100, fast, d.id);
        add(f);
      }
  }

  // Median GB/s of `ops` run together `iters` times (after warm-up), one
  // figure per op.
  std::vector<double> copy_gbps(Copier& c, const std::vector<CopyOp>& ops) const {
    for (int w = 0; w < plan_.warmup; ++w) c.run(ops);
    std::vector<std::vector<double>> us(ops.size());
    for (int i = 0; i < plan_.iters; ++i) {
      const CopyTiming t = c.run(ops);
      for (std::size_t k = 0; k < ops.size(); ++k) us[k].push_back(t.op_us[k]);
    }
    std::vector<double> out;
    for (std::size_t k = 0; k < ops.size(); ++k)
      out.push_back(static_cast<double>(ops[k].bytes) / (compute_stats(us[k]).median * 1e3));
    return out;
  }

  // h2d and d2h at once on each device, against the two alone.
  void duplex() {
    auto copier = be_.copier(Method::dma, {});
    for (const auto& d : be_.devices()) {
      const Record* h = find("h2d", d.id, "dma");
      const Record* b = find("d2h", d.id, "dma");
      if (!h || !b) continue;
      try {
        auto hs = be_.allocate(MemKind::pinned, -1, plan_.size);
        auto hd = be_.allocate(MemKind::pinned, -1, plan_.size);
        auto ds = be_.allocate(MemKind::device, d.id, plan_.size);
        auto dd = be_.allocate(MemKind::device, d.id, plan_.size);
        const auto g = copy_gbps(*copier, {{hs.get(), dd.get(), plan_.size},
                                           {ds.get(), hd.get(), plan_.size}});
        Finding f{"duplex", fmt::format("device {} h2d+d2h dma", d.id), Verdict::none, g[0] + g[1],
                  h->gbps_median + b->gbps_median, "GB/s", ""};
        if (be_.name() == "host") {
          f.why = fmt::format("for reference: both directions share host memory here (h2d {:.2f} "
                              "+ d2h {:.2f} GB/s at once)",
                              g[0], g[1]);
        } else {
          f.verdict = grade(f.ratio(), 0.7, 0.4);
          f.why = f.verdict == Verdict::pass
                      ? "both directions at once add up: the link runs full duplex"
                      : fmt::format("h2d {:.2f} + d2h {:.2f} GB/s at once reach {:.0f} % of the "
                                    "two alone: the link or the copy engines do not run both "
                                    "directions together",
                                    g[0], g[1], f.ratio() * 100);
        }
        add(f);
      } catch (const std::exception& e) {
        add({"duplex", fmt::format("device {}", d.id), Verdict::warn, 0, 0, "GB/s",
             fmt::format("did not run: {}", e.what())});
      }
    }
  }

  // The default pinned allocation against pinned memory on each device's
  // own NUMA node: a buffer on the far node costs bandwidth.
  void numa() {
    auto copier = be_.copier(Method::dma, {});
    for (const auto& d : be_.devices()) {
      Finding f{"numa", fmt::format("h2d device {} dma", d.id), Verdict::none, 0, 0, "GB/s", ""};
      try {
        auto near = be_.allocate_pinned_near(d.id, plan_.size);
        auto dflt = be_.allocate(MemKind::pinned, -1, plan_.size);
        auto dst = be_.allocate(MemKind::device, d.id, plan_.size);
        const double g_near = copy_gbps(*copier, {{near.get(), dst.get(), plan_.size}})[0];
        const double g_dflt = copy_gbps(*copier, {{dflt.get(), dst.get(), plan_.size}})[0];
        f.measured = g_dflt;
        f.expected = g_near;
        f.verdict = grade(f.ratio());
        f.why = f.verdict == Verdict::pass
                    ? fmt::format("the default pinned buffer does as well as one on the device's "
                                  "NUMA node ({})",
                                  d.numa)
                    : fmt::format("the default pinned buffer reaches {:.0f} % of one on the "
                                  "device's NUMA node {}: it is misplaced (bind it there: numactl "
                                  "--membind={} or the allocator's NUMA option)",
                                  f.ratio() * 100, d.numa, d.numa);
      } catch (const NotSupported& e) {
        f.why = fmt::format("not measured: {}", e.what());
      } catch (const std::exception& e) {
        f.verdict = Verdict::warn;
        f.why = fmt::format("did not run: {}", e.what());
      }
      add(f);
    }
  }

  // Devices against each other, per case and method.
  void devices() {
    if (be_.devices().size() < 2) {
      add({"devices", "all", Verdict::none, 0, 0, "", "one device: no peers to compare"});
      return;
    }
    for (const char* kase : {"h2d", "d2h", "d2d"})
      for (const char* m : {"dma", "core"}) {
        std::vector<const Record*> rows;
        for (const auto& d : be_.devices())
          if (const Record* r = find(kase, d.id, m)) rows.push_back(r);
        std::vector<double> v;
        for (const Record* r : rows) v.push_back(r->gbps_median);
        const auto ratios = peer_ratios(v);
        for (std::size_t i = 0; i < ratios.size(); ++i) {
          Finding f{"devices", where_of(*rows[i]), grade(ratios[i]), v[i],
                    v[i] / std::max(ratios[i], 1e-9), "GB/s", ""};
          f.why = f.verdict == Verdict::pass
                      ? fmt::format("within 20 % of its peers ({} devices)", rows.size())
                      : fmt::format("device {} is at {:.0f} % of its peers' {}: this device or "
                                    "its slot is slow",
                                    device_of(*rows[i]), ratios[i] * 100,
                                    rows.size() >= 3 ? "median" : "best");
          add(f);
        }
      }
  }

  // p2p pairs against the pairs of the same link class.
  void pairs() {
    std::map<std::string, std::vector<const Record*>> classes;
    for (const Record& r : copies_)
      if (r.kase == "p2p" && r.status == Status::ok)
        classes[fmt::format("{} {}", be_.link_type(r.src, r.dst), r.method)].push_back(&r);
    if (classes.empty()) {
      add({"pairs", "all", Verdict::none, 0, 0, "",
           "no p2p pairs measured (one device, or none can reach another)"});
      return;
    }
    for (const auto& [cls, rows] : classes) {
      std::vector<double> v;
      for (const Record* r : rows) v.push_back(r->gbps_median);
      const auto ratios = peer_ratios(v);
      if (ratios.empty()) {
        add({"pairs", where_of(*rows[0]), Verdict::none, v[0], 0, "GB/s",
             fmt::format("the only pair of its class ({})", cls)});
        continue;
      }
      std::set<int> slow;  // devices in every slow pair
      for (std::size_t i = 0; i < ratios.size(); ++i) {
        Finding f{"pairs", where_of(*rows[i]), grade(ratios[i]), v[i],
                  v[i] / std::max(ratios[i], 1e-9), "GB/s", ""};
        f.why = f.verdict == Verdict::pass
                    ? fmt::format("within 20 % of the {} pairs of its class ({})", rows.size(), cls)
                    : fmt::format("{:.0f} % of the pairs of its class ({}): look at devices {} "
                                  "and {} and the link between them",
                                  ratios[i] * 100, cls, rows[i]->src, rows[i]->dst);
        add(f);
      }
    }
  }

  void latency() {
    CopyConfig cfg;
    cfg.cases = {CopyCase::h2d};
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

  void engine() {
    EngineClientConfig cfg;
    cfg.ops = {engine::Op::read};
    cfg.total = std::min<Bytes>(plan_.size, 16ULL << 20);
    cfg.block = 4ULL << 20;
    cfg.loops = plan_.iters;
    cfg.warmup = 1;
    try {
      auto host = make_backend("host");
      const EngineRun run = engine_selftest(cfg, *host, 0, {false});
      for (const Record& r : run.records) {
        if (r.status != Status::ok) continue;
        Finding f{"engine", "read 4 MiB loopback", grade(r.gbps_median / reference_, 0.25, 0.1),
                  r.gbps_median, reference_, "GB/s", ""};
        f.why = f.verdict == Verdict::pass
                    ? "the UCX engine keeps up with memcpy on the cores"
                    : fmt::format("the UCX engine reaches {:.0f} % of memcpy on the cores: look at "
                                  "UCX_TLS and the transports UCX chose",
                                  f.ratio() * 100);
        add(f);
      }
    } catch (const std::exception& e) {
      add({"engine", "read 4 MiB loopback", Verdict::warn, 0, 0, "GB/s",
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

  void noise() {
    int noisy = 0;
    double worst = 0;
    for (const Record& r : copies_) {
      if (r.status == Status::ok) worst = std::max(worst, r.time_us.cv * 100);
      if (r.status != Status::ok || r.time_us.cv <= 0.10) continue;
      ++noisy;
      add({"noise", where_of(r), Verdict::warn, r.time_us.cv * 100, 10, "% CV",
           "the machine was noisy during this measurement: re-run (or --full) before trusting "
           "its verdicts"});
    }
    if (noisy == 0)
      add({"noise", "all", Verdict::pass, worst, 10, "% CV",
           fmt::format("all {} copy measurements under 10 % CV", copies_.size())});
  }

  Backend& be_;
  Plan plan_;
  std::set<std::string> checks_;
  Progress progress_;
  double reference_ = 0;
  std::vector<ClockHolds> holds_before_;
  std::vector<Record> copies_;
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
      const auto doc = run_ranked(ranks, args, 300);
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
            f.why = f.verdict == Verdict::pass
                        ? "a peer rank's window read near memcpy speed (same host)"
                        : fmt::format("{:.0f} % of memcpy on the cores: look at the window's "
                                      "transport (shm or rma) and MPICH's settings",
                                      f.ratio() * 100);
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

Record to_record(const Finding& f, Bytes size) {
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

  void add_options(CLI::App& app) override {
    auto* q = app.add_flag("--quick", quick_, "a short suite (16 MiB, 5 iterations: seconds)");
    auto* f = app.add_flag("--full", full_, "a long suite (256 MiB, 10 iterations)");
    q->excludes(f);
    app.add_option("--checks", checks_,
                   fmt::format("comma list of checks to run (default all): {}",
                               fmt::join(kChecks, ", ")));
    RunOpts which;
    which.ranks = true;
    add_run_options(app, run_, which);
    app.footer(R"(Measures h2d, d2h and d2d per device with both methods, the p2p matrix, a 4 KiB
latency and the engine on loopback, then holds each figure against what its
link should give: PCIe generation x width (sysfs), device memory clock x bus
width, NVLink count x per-link rate (NVML), the host's memcpy on all cores;
compares directions, devices and pairs of one link class; flags noisy
measurements and clocks held down by power or thermal limits (NVML). Exit 1
when a check fails.
Examples:
  xferbench doctor
  xferbench doctor --quick --format json -o doctor.json
  xferbench doctor --backend cuda --checks bandwidth,link,direction
  xferbench doctor --ranks 2        # also remote get and an allreduce across 2 ranks)");
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
    ChosenBackend chosen = choose_backend(*this, run_.backend, nullptr);
    Backend& be = *chosen.backend;
    Output out(run_);
    Doctor doc(be, plan, checks, progress_for(run_));
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
                   {"reference_gbps", doc.reference()}},
                  {},
                  {}};
    for (const Finding& f : findings) report.results.push_back(to_record(f, plan.size));
    return report_once(*this, std::move(report), run_, out);
  }

 private:
  bool quick_ = false, full_ = false;
  std::string checks_;
  RunOptions run_;
  RecordSchema schema_{"doctor"};
};

}  // namespace

std::unique_ptr<Family> make_doctor_family() { return std::make_unique<DoctorFamily>(); }

}  // namespace xb
