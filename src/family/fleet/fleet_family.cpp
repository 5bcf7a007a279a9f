// `xferbench fleet`: the census, the pair rounds, the verdicts (docs/commands/fleet.md).
#include "family/fleet/fleet_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "backend/host/throttle.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/sysinfo.hpp"
#include "family/cycles.hpp"
#include "family/doctor/doctor_family.hpp"
#include "family/fleet/fleet_census.hpp"
#include "family/fleet/fleet_evidence.hpp"
#include "family/fleet/fleet_judge.hpp"
#include "family/fleet/fleet_pairs.hpp"
#include "family/fleet/fleet_prom.hpp"
#include "family/fleet/fleet_rails.hpp"
#include "family/fleet/fleet_schedule.hpp"
#include "family/fleet/fleet_steps.hpp"
#include "family/fleet/fleet_table.hpp"
#include "family/options.hpp"
#include "family/output.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

std::string digest(const FleetConfig& c) {
  return fmt::format(
      "size={} iters={} warmup={} pings={} deadline={} check={} passes={} conc={} "
      "seed={} threshold={} expected={} exclude={} census={} quick={} rails={} nics={}",
      c.pair.size, c.pair.iters, c.pair.warmup, c.pair.pings, c.pair.deadline_s, c.pair.check,
      c.passes, c.concurrency, c.seed, c.thresholds.grade.fail_below, c.expected,
      fmt::join(c.exclude, ","), c.census, c.quick, c.rails, c.nics.size());
}

// Each rank's name: its host, and "#rank" where several ranks share one.
std::vector<std::string> labels_of(const std::vector<std::string>& hosts) {
  std::map<std::string, int> count;
  for (const auto& h : hosts) ++count[h];
  std::vector<std::string> out;
  for (std::size_t r = 0; r < hosts.size(); ++r)
    out.push_back(count[hosts[r]] > 1 ? fmt::format("{}#{}", hosts[r], r) : hosts[r]);
  return out;
}

Record verdict_record(const Finding& f) { return finding_record(f, 0); }

// What the pairs move their bytes over (the params' pairs_over).
std::string pairs_over(const FleetConfig& c) {
  return c.nics.empty()
             ? std::string("host memory, MPI point-to-point")
             : fmt::format("host memory, UCX tag messages on a worker per rail's NIC ({})",
                           fmt::join(c.nics, ","));
}

// A rail's judgement into the run's: its hosts are `offset` on in the
// names the summary uses; the run's reference is its slowest rail's.
void merge_judgement(FleetJudgement& into, const FleetJudgement& from, int offset, bool first) {
  for (int h : from.slow_hosts) into.slow_hosts.push_back(h + offset);
  for (int h : from.warn_hosts) into.warn_hosts.push_back(h + offset);
  for (const auto& l : from.slow_links) into.slow_links.push_back({l.a + offset, l.b + offset});
  for (const auto& l : from.warn_links) into.warn_links.push_back({l.a + offset, l.b + offset});
  if (first || from.reference < into.reference) {
    into.reference = from.reference;
    into.latency_reference = from.latency_reference;
  }
  into.expected = from.expected;
}

// The run's summary: rank 0's verdicts, the hosts named as `names` (by rail
// with --rails).
Params summary_of(const FleetJudgement& j, const std::vector<std::string>& names,
                  std::int64_t failed_pairs, const FleetThresholds& t, std::size_t confirmed,
                  std::size_t held_back) {
  const auto hosts_text = [&](const std::vector<int>& v) {
    std::vector<std::string> out;
    out.reserve(v.size());
    for (int h : v) out.push_back(names[static_cast<std::size_t>(h)]);
    return fmt::format("{}", fmt::join(out, ","));
  };
  const auto links_text = [&](const std::vector<FleetPair>& v) {
    std::vector<std::string> out;
    out.reserve(v.size());
    for (const auto& l : v)
      out.push_back(names[static_cast<std::size_t>(l.a)] + "<->" +
                    names[static_cast<std::size_t>(l.b)]);
    return fmt::format("{}", fmt::join(out, ","));
  };
  return {{"reference_gbps", std::isnan(j.reference) ? 0.0 : j.reference},
          {"expected_gbps", j.expected},
          {"latency_us", std::isnan(j.latency_reference) ? 0.0 : j.latency_reference},
          {"slow_hosts", hosts_text(j.slow_hosts)},
          {"slow_links", links_text(j.slow_links)},
          {"warn_hosts", hosts_text(j.warn_hosts)},
          {"warn_links", links_text(j.warn_links)},
          {"failed_pairs", failed_pairs},
          {"thresholds", fmt::format("PASS >= {:g}, WARN >= {:g}, latency WARN above {:g}x",
                                     t.grade.warn_below, t.grade.fail_below, t.latency_warn)},
          {"confirmed", static_cast<std::int64_t>(confirmed)},
          {"pairs_held_back", static_cast<std::int64_t>(held_back)}};
}

std::string nic_note(const std::vector<std::string>& hosts) {
  std::set<std::string> distinct(hosts.begin(), hosts.end());
  if (distinct.size() < hosts.size())
    return "ranks share a host: their traffic does not cross a NIC (give --expected GBPS)";
  return "";
}

// The fleet's expected figure: --expected, else 0.8 x the median over hosts
// of the fastest NIC's rate; 0 with `note` saying why there is none.
double expected_gbps(Runtime& rt, const std::vector<std::string>& hosts, double given,
                     std::string& note) {
  if (given > 0) return given;
  note = nic_note(hosts);
  std::vector<double> rates;
  for (const auto& w : rt.allgather(fmt::format("{}", fastest_nic_mbps(net_interfaces()))))
    rates.push_back(std::atof(w.c_str()));
  const double mbps = robust_median(rates, false);
  if (note.empty() && mbps > 0) return mbps / 8 / 1e3 * 0.80;
  if (note.empty()) note = "no NIC reports a link rate in sysfs (give --expected GBPS)";
  return 0;
}

// ---- the family ------------------------------------------------------------------

class FleetFamily final : public Family {
 public:
  FleetFamily() {
    schema_.add(fleet_field::src_host, FieldRole::info, "the sending member (host, or host#rank)")
        .add(fleet_field::dst_host, FieldRole::info, "the receiving member")
        .add(fleet_field::pass, FieldRole::key, "the pass (positions reshuffled each pass)")
        .add(fleet_field::round, FieldRole::info, "the round of the pass")
        .add(fleet_field::concurrency, FieldRole::info,
             "pairs measured at once (0: the whole round)")
        .add(fleet_field::confirm, FieldRole::info, "a suspect re-measured alone")
        .add(fleet_field::box_s, FieldRole::info,
             "the pair's time box in its step, s (16x the lower quartile of recent pairs, 5 s to "
             "--deadline)")
        .add(fleet_field::boxed, FieldRole::info,
             "fewer timed transfers than asked: how many, and the box that ended them")
        .add(fleet_field::reached, FieldRole::info,
             "false: the pair failed in an earlier part of its step")
        .add(fleet_field::rail, FieldRole::key,
             "--rails on the host backend: the rail, i.e. the index of its NIC in --nic")
        .add(fleet_field::nic, FieldRole::info,
             "the sender's NIC whose counters moved the bytes (the rail's with --rails; absent: "
             "no counters, or shared memory)")
        .add(fleet_field::nic_tx_bytes, FieldRole::info,
             "bytes the sender's NIC counted sending in this part of the step (the host's "
             "counters: warm-up, acknowledgements and other traffic of the host included)")
        .add(fleet_field::nic_rx_bytes, FieldRole::info,
             "bytes the receiver's NIC counted receiving in it")
        .add(fleet_field::nic_warning, FieldRole::info,
             "--rails: the rail's bytes went through another NIC than its own, which (per host)")
        .add(fleet_field::nic_errors, FieldRole::info,
             "NIC error counters that grew in it, per host (\"vm3 mlx5_0:1: symbol_error +412\")")
        .add(doctor_field::verdict, FieldRole::info, "PASS, WARN, FAIL, or -")
        .add(doctor_field::measured, FieldRole::metric, "the figure judged, in `unit`")
        .add(doctor_field::expected, FieldRole::metric, "what it is held against; 0: none")
        .add(doctor_field::ratio, FieldRole::metric, "measured / expected")
        .add(doctor_field::unit, FieldRole::info,
             "GB/s, us, hosts; census rows: checks, or the unit of the host's worst doctor finding")
        .add(doctor_field::why, FieldRole::info, "one sentence: why, and where to look");
  }
  std::string name() const override { return "fleet"; }
  bool judges_machines() const override { return true; }
  std::string summary() const override {
    return "every pair of hosts in rounds: name the slow host, link or direction";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override {
    r.add({"fleet.pairs", "fleet",
           "every pair of hosts: a->b, b->a, both at once, 8-byte ping-pong; verdicts per host and "
           "link",
           [](const Capabilities&) { return Support::yes(); }});
    r.add({"fleet.census", "fleet",
           "doctor --quick on every host, each figure against the other hosts'",
           [](const Capabilities&) { return Support::yes(); }});
  }
  std::string table_note(const Report&) const override {
    return "send: GB/s of one transfer, timed on the sender to the receiver's acknowledgement; a "
           "pair's figure is its weaker direction; verdicts: docs/commands/fleet.md; exit 1 on a "
           "FAIL\n";
  }
  std::string tables(const Report& r) const override;
  std::string prometheus(const Report& r) const override { return fleet_prometheus(r); }

  void add_options(CLI::App& app) override {
    app.add_option_function<std::string>(
           "-s,--size", [this](const std::string& s) { cfg_.pair.size = parse_size(s, "-s"); },
           "bytes per transfer (default 64M)")
        ->type_name("SIZE");
    app.add_option("--passes", cfg_.passes,
                   "passes over every pair, positions reshuffled each (default 1)")
        ->check(CLI::Range(1, 1000));
    app.add_option("--concurrency", concurrency_,
                   "pairs measured at once: all (a whole round), or K (1 separates a link's "
                   "capacity from contention)")
        ->default_str("all");
    app.add_option("--seed", cfg_.seed, "the shuffle's seed (default 1)")
        ->check(CLI::Validator(
            [](std::string& v) {
              char* end = nullptr;
              errno = 0;
              (void)std::strtoull(v.c_str(), &end, 10);
              return v.empty() || v[0] == '-' || v[0] == '+' || *end || errno == ERANGE
                         ? fmt::format("'{}': give a seed from 0 to 2^64-1", v)
                         : std::string();
            },
            "SEED"));
    number_in(
        app.add_option("--threshold", cfg_.thresholds.grade.fail_below,
                       "FAIL below this ratio to the reference (default 0.5; WARN below 0.8)"),
        0.01, 0.99);
    number_in(app.add_option("--expected", cfg_.expected,
                             "GB/s a pair should reach (default: 0.8 x the fastest NIC's rate in "
                             "sysfs)"),
              0.0, 1e6);
    app.add_option("--exclude", exclude_, "hosts (or host#rank) to leave out, comma list");
    number_in(app.add_option("--deadline", cfg_.pair.deadline_s,
                             "the most seconds a pair's step may take (its time box: 16x the "
                             "typical pair, at least 5 s, at most this; default 60)"),
              0.1, 86400.0);
    app.add_option("--pings", cfg_.pair.pings, "timed 8-byte ping-pongs per pair (default 200)")
        ->check(CLI::Range(1, 1000000));
    app.add_flag("--no-census", no_census_, "skip the census (doctor --quick on every host)");
    number_in(app.add_option("--census-deadline", cfg_.census_deadline_s,
                             "the most seconds a host's census may take: one that does not "
                             "finish is a FAIL row (default 300)"),
              1.0, 86400.0);
    app.add_flag(
        "--quick", cfg_.quick,
        fmt::format("a first look at a large fleet: {} random perfect matchings per pass "
                    "instead of every pair (finds slow hosts; a slow link only when drawn)",
                    kQuickMatchings));
    app.add_option("--matrix", matrix_,
                   fmt::format("pair records kept: full (every pair), flagged (failed pairs and "
                               "those below the FAIL line), auto (full up to {} hosts; default)",
                               kFullMatrixHosts))
        ->check(CLI::IsMember({"auto", "full", "flagged"}));
    app.add_flag("--rails", cfg_.rails,
                 "rail by rail: on the host backend NIC i of host A with NIC i of host B (a UCX "
                 "worker per NIC: --nic, default every InfiniBand port); on cuda GPU g with GPU g "
                 "(not in this version: waived)");
    app.add_option("--nic", nic_,
                   "--rails on the host backend: the rails' NICs, in rail order, as UCX names "
                   "them (mlx5_0:1,mlx5_1:1 or eth0,eth1); the same list on every host");
    add_run_options(app, run_,
                    {.iters = "timed transfers per direction (default 5)",
                     .warmup = "warm-up transfers (default 1)",
                     .check = "skip verification of the received bytes",
                     .check_every = true,
                     .ranks = true,
                     .prom = true});
    app.footer(
        R"(One rank per host (srun --ntasks-per-node=1, mpirun --map-by ppr:1:node, or MPICH's
mpiexec -ppn 1): a census (doctor --quick on every host, each figure held
against the other hosts'), then every pair of hosts once per pass in rounds of disjoint
pairs (a->b, b->a, both at once, an 8-byte ping-pong), then verdicts: a host slow with
every partner, a link slow while both its ends are fast elsewhere, the direction, latency,
and the whole fleet against the NICs' rate. Suspects are measured again before a FAIL.
A failed pair is a FAIL of its link (or host), never a gap. Needs >= 4 hosts to tell a slow
host from a slow link. Exit 1 on a FAIL.
Run time: N-1 rounds a pass (N odd: N), each as long as its slowest pair; a pair is
time-boxed to 16x the typical pair (at least 5 s, at most --deadline), so a slow or dead
host adds about 5 s to every round (1,024 hosts: ~85 min), a slow link to one; worst case,
every step at its box: (steps + re-measurements) x --deadline. --quick: 4 rounds a pass.
Examples:
  srun -N 16 --ntasks-per-node=1 --mpi=pmix xferbench fleet --exclude node07   (Open MPI build)
  srun -N 16 --ntasks-per-node=1 --mpi=pmi2 xferbench fleet                    (MPICH build)
  mpirun --hostfile hosts --map-by ppr:1:node xferbench fleet --passes 3 -s 64M --format json -o fleet.json
  mpiexec -f hosts -ppn 1 xferbench fleet                                      (MPICH's hydra)
  xferbench report fleet.json -o fleet.html)");
  }

  int run(const Invocation& inv) override;

 private:
  FleetConfig cfg_;
  std::string concurrency_ = "all";
  std::string matrix_ = "auto";
  std::string exclude_;
  std::string nic_;
  std::string rails_how_;  // --rails on a GPU backend: the devices each rail serves, or why none
  bool no_census_ = false;
  RunOptions run_;
  RecordSchema schema_{"fleet"};
};

int FleetFamily::run(const Invocation& inv) {
  if (concurrency_ == "all") {
    cfg_.concurrency = 0;
  } else {
    try {
      std::size_t used = 0;
      cfg_.concurrency = std::stoi(concurrency_, &used);
      if (used != concurrency_.size() || cfg_.concurrency < 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw UsageError(
          fmt::format("--concurrency '{}': give all, or a count of pairs >= 1", concurrency_));
    }
  }
  cfg_.pair.iters = run_.iters_or(5);
  cfg_.pair.warmup = run_.warmup_or(1);
  const CheckMode mode = check_mode(run_);
  cfg_.pair.check = mode != CheckMode::none;
  cfg_.pair.check_every = mode == CheckMode::every;
  cfg_.census = !no_census_;
  if (!exclude_.empty()) cfg_.exclude = option_set("--exclude", exclude_, "HOST[,HOST...]");
  cfg_.thresholds.grade.warn_below = std::max(0.8, cfg_.thresholds.grade.fail_below);
  const std::vector<host::Throttle> throttle = [] {
    const char* t = std::getenv("XFERBENCH_HOST_THROTTLE");
    return t && *t ? host::parse_throttle(t) : std::vector<host::Throttle>{};
  }();

  std::vector<std::string> hosts, names;
  std::vector<int> members;
  Ranked r = start_ranked(*this, run_, inv, [&](Runtime& rt, Backend& be) {
    std::string err;
    if (rt.size() < 2)
      err =
          "fleet needs at least 2 ranks, one per host (srun --ntasks-per-node=1, mpirun --map-by "
          "ppr:1:node, or mpiexec -ppn 1)";
    else if (!nic_.empty() && !cfg_.rails)
      err = "--nic names the rails' NICs: it needs --rails";
    else if (cfg_.rails)
      try {
        cfg_.nics = choose_rails(nic_, be, rails_how_);
      } catch (const UsageError& e) {
        err = fmt::format("rank {} ({}): {}", rt.rank(), host_name(), e.what());
      }
    err = rt.agree(err);
    if (!err.empty()) throw UsageError(err);
    if (cfg_.rails) err = rails_mismatch(rt, cfg_.nics.size());
    if (!err.empty()) throw UsageError(err);
    const auto digests = rt.allgather(digest(cfg_));
    for (int k = 1; k < rt.size(); ++k)
      if (digests[static_cast<std::size_t>(k)] != digests[0])
        err = fmt::format("rank {} was given other options than rank 0", k);
    hosts = rt.allgather(host_name());
    names = labels_of(hosts);
    std::set<std::string> out;
    for (const auto& e : cfg_.exclude) {
      bool known = false;
      for (std::size_t k = 0; k < hosts.size(); ++k)
        if (hosts[k] == e || names[k] == e) known = true, out.insert(names[k]);
      if (!known && err.empty())
        err = fmt::format("--exclude {}: not a host of this run ({})", e, fmt::join(names, ", "));
    }
    for (int k = 0; k < rt.size(); ++k)
      if (!out.count(names[static_cast<std::size_t>(k)]) &&
          std::find(cfg_.exclude.begin(), cfg_.exclude.end(), hosts[static_cast<std::size_t>(k)]) ==
              cfg_.exclude.end())
        members.push_back(k);
    if (err.empty() && members.size() < 2)
      err = fmt::format("--exclude leaves {} host(s): fleet needs at least 2", members.size());
    if (err.empty())  // a send and a receive buffer of -s (fleet_pairs.hpp: PairBuffers)
      err = memory_shortfall(fmt::format("-s {}", format_size(cfg_.pair.size)),
                             cfg_.pair.size > ~Bytes{0} / 2 ? ~Bytes{0} : 2 * cfg_.pair.size,
                             fmt::format(" on rank {}", rt.rank()));
    err = rt.agree(err);
    if (!err.empty()) throw UsageError(err);
  });
  Runtime& rt = *r.rt;
  cfg_.flagged = matrix_ == "flagged" || (matrix_ == "auto" && members.size() > kFullMatrixHosts);
  // From here on every exchange of the ranks goes through rank 0 alone: a
  // dead link between two other hosts is a failed pair, not a hung run.
  rt.set_star(true);
  std::vector<std::string> member_names;
  member_names.reserve(members.size());
  for (int m : members) member_names.push_back(names[static_cast<std::size_t>(m)]);
  const std::string concurrency_text = cfg_.concurrency ? std::to_string(cfg_.concurrency) : "all";
  Params params = {
      {"size", static_cast<std::int64_t>(cfg_.pair.size)},
      {"iters", std::int64_t{cfg_.pair.iters}},
      {"warmup", std::int64_t{cfg_.pair.warmup}},
      {"passes", std::int64_t{cfg_.passes}},
      {"concurrency", concurrency_text},
      {"seed", static_cast<std::int64_t>(cfg_.seed)},
      {"threshold", cfg_.thresholds.grade.fail_below},
      {"hosts", fmt::format("{}", fmt::join(member_names, ","))},
      {"excluded", exclude_},
      {"schedule", cfg_.quick
                       ? fmt::format("quick: {} random perfect matchings a pass", kQuickMatchings)
                       : std::string("every pair: the circle method")},
      {"matrix", std::string(cfg_.flagged ? "flagged" : "full")},
      {"deadline_s", cfg_.pair.deadline_s},
      {"pairs_over", pairs_over(cfg_)}};
  if (!cfg_.nics.empty() && !rails_how_.empty())
    params.emplace_back("rails", rails_how_);  // a GPU backend: the devices each rail serves
  r.begin(*this, "fleet", params);
  const Progress progress = rt.root() ? progress_for(run_) : Progress{};
  std::vector<Record> all;
  const auto done = [&](Record rec) {
    record_done(rec);
    all.push_back(std::move(rec));
  };

  if (cfg_.rails && cfg_.nics.empty() && rt.root())
    done(Record::waived("rails", r.backend->name(), -1, -1, cfg_.pair.size,
                        rails_how_ + "; the pairs move host memory over MPI"));

  // The census: the first rank of each host measures it, all hosts at once.
  if (cfg_.census) {
    std::string mine;
    const bool first_of_host =
        std::find(members.begin(), members.end(), rt.rank()) != members.end() && [&] {
          for (int m : members)
            if (hosts[static_cast<std::size_t>(m)] == host_name()) return m == rt.rank();
          return false;
        }();
    if (first_of_host)
      mine = host_census(r.backend->name(), r.backend_broken, cfg_.census_deadline_s);
    const auto gathered = rt.allgather(mine);
    if (rt.root()) {
      std::vector<std::string> census_hosts;
      std::vector<std::vector<Finding>> per_host;
      for (int m : members) {
        const std::string& w = gathered[static_cast<std::size_t>(m)];
        if (w.empty()) continue;
        census_hosts.push_back(hosts[static_cast<std::size_t>(m)]);
        std::vector<Finding> fs;
        for (const auto& f : nlohmann::json::parse(w))
          fs.push_back({f.at("check").get<std::string>(), f.at("where").get<std::string>(),
                        verdict_of(f.at("verdict").get<std::string>()),
                        f.at("measured").get<double>(), f.at("expected").get<double>(),
                        f.at("unit").get<std::string>(), f.at("why").get<std::string>()});
        per_host.push_back(std::move(fs));
      }
      for (const auto& f : census_rows(census_hosts, per_host, cfg_.thresholds.grade))
        done(verdict_record(f));
    }
    stop_point(&rt);
  }

  // The pair rounds and their verdicts: once over MPI, or once per rail.
  std::string note;
  const double expected = expected_gbps(rt, hosts, cfg_.expected, note);
  PairSteps pairs(rt, members, names, cfg_, throttle, progress, done);
  FleetJudgement j;
  std::int64_t failed_pairs = 0;
  std::vector<std::string> judged_names;  // the hosts as verdicts name them, rail by rail
  // `scope`: what the fleet-wide rows speak of ("all", or "rail 1 (xb1)").
  const auto measure = [&](const std::vector<std::string>& judged, const std::string& scope) {
    std::vector<int> index(members.size());
    for (std::size_t i = 0; i < members.size(); ++i) index[i] = static_cast<int>(i);
    const std::vector<PairFigures> round_figures = pairs.run(
        cfg_.quick
            ? quick_schedule(index, kQuickMatchings * cfg_.passes, cfg_.concurrency, cfg_.seed)
            : fleet_schedule(index, cfg_.passes, cfg_.concurrency, cfg_.seed),
        false);
    const FleetMatrix m = fleet_matrix(static_cast<int>(members.size()), round_figures);
    // The verdicts, then the suspects again (confirm_all: up to three rounds,
    // then the links of hosts it cleared); the other ranks follow rank 0's
    // plans, one again() per call of its measure.
    if (!rt.root()) {
      for (int k = 0; k < 2 * kConfirmRounds; ++k) pairs.again({});
      return;
    }
    FleetJudgement rj = judge_fleet(m, judged, expected, note, cfg_.thresholds);
    const std::vector<PairFigures> again =
        confirm_all(rj, m, judged, cfg_.thresholds,
                    [&](const std::vector<FleetPair>& suspects) { return pairs.again(suspects); });
    // Every failed pair named: a verdict never passes over its own records.
    std::vector<PairFigures> measured = round_figures;
    measured.insert(measured.end(), again.begin(), again.end());
    cover_failures(rj, judged, measured);
    add_counter_evidence(rj, judged, measured);
    for (auto& f : rj.findings) {
      if (f.check == "fleet" && scope != "all")
        f.where = f.where == "all" ? scope : scope + " " + f.where;
      done(verdict_record(f));
    }
    for (const auto& f : round_figures) failed_pairs += f.failed;
    const int offset = static_cast<int>(judged_names.size() - judged.size());
    merge_judgement(j, rj, offset, offset == 0);
  };
  if (cfg_.nics.empty()) {
    judged_names = member_names;
    measure(member_names, "all");
  }
  for (std::size_t rail = 0; rail < cfg_.nics.size(); ++rail) {
    const std::string& nic = cfg_.nics[rail];
    const std::unique_ptr<PairLink> link = open_rail(rt, nic);
    pairs.on_rail(*link, static_cast<int>(rail), nic);
    std::vector<std::string> on_rail;
    on_rail.reserve(member_names.size());
    for (const auto& h : member_names)
      on_rail.push_back(rail_label(h, static_cast<int>(rail), nic));
    judged_names.insert(judged_names.end(), on_rail.begin(), on_rail.end());
    measure(on_rail, fmt::format("rail {} ({})", rail, nic));
    rt.barrier();  // no rank closes its worker while a peer still talks to it
  }
  Params summary;
  if (rt.root())
    summary = summary_of(j, judged_names, failed_pairs, cfg_.thresholds, pairs.confirmed(),
                         pairs.held_back());
  return r.report(*this, {"fleet", {}, params, std::move(all), std::move(summary)}, run_);
}

std::string FleetFamily::tables(const Report& r) const { return fleet_tables(r); }

}  // namespace

std::unique_ptr<Family> make_fleet_family() { return std::make_unique<FleetFamily>(); }

}  // namespace xb
