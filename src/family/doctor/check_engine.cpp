// engine: the UCX engine on loopback against memcpy on the cores (a FAIL
// must reproduce on a second selftest), or with --engine-server its lanes
// to those servers, held against each other and their NIC's line rate.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "backend/select/select.hpp"
#include "family/doctor/doctor_context.hpp"
#include "family/engine/engine_bench.hpp"

namespace xb::doctor {
namespace {

// What a lane's NIC counted over its timed loops (its record's fields, from
// core/nic_counters): "; xb1 counted 41.9 MB of the lane's 41.9 MB", the
// error counters that grew, and a WARN that the bytes took another NIC.
// "" where the NIC has no counters.
std::string counter_evidence(const Record& r) {
  std::string out;
  const auto rx = r.get(engine_field::nic_rx_bytes), tx = r.get(engine_field::nic_tx_bytes);
  if (rx && tx) {
    const double moved = static_cast<double>(std::max(*rx, *tx));
    const double lane = static_cast<double>(r.bytes) * r.iters;
    out += fmt::format("; nic {} counted {:.1f} MB over the lane's {:.1f} MB",
                       r.get(engine_field::nic).value_or("?"), moved / 1e6, lane / 1e6);
  }
  if (const auto e = r.get(engine_field::nic_errors); e && !e->empty())
    out += "; error counters that grew: " + *e;
  if (const auto w = r.get(engine_field::nic_warning); w && !w->empty()) out += "; WARN: " + *w;
  return out;
}

class Engine final : public Check {
 public:
  Engine() : Check("engine", "the UCX engine against memcpy, or its lanes (--engine-server)") {}

  void report(Context& ctx) override {
    if (!ctx.engine_target().servers.empty()) return lanes(ctx);
    selftest(ctx);
  }

 private:
  // The engine on loopback against memcpy; a FAIL must reproduce on a
  // second selftest.
  void selftest(Context& ctx) const {
    EngineClientConfig cfg;
    cfg.ops = {engine::Op::read};
    cfg.total = std::min<Bytes>(ctx.plan().size, 16ULL << 20);
    cfg.block = 4ULL << 20;
    cfg.loops = ctx.plan().iters;
    cfg.warmup = 1;
    const char* where = "read 4 MiB loopback";
    const double reference = ctx.reference();
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
      Verdict v = grade(r->gbps_median / reference, g.warn_below, g.fail_below);
      std::string again;
      if (v == Verdict::fail) {
        const LoadMeter meter;
        const auto second = measure();
        const CpuLoad load = meter.stop();
        const int cores = online_cores();
        const bool busy =
            too_busy_to_judge(first_load.other_cores, cores, r->time_us.cv) ||
            too_busy_to_judge(load.other_cores, cores, second ? second->time_us.cv : 1.0);
        if (!second ||
            grade(second->gbps_median / reference, g.warn_below, g.fail_below) != Verdict::fail) {
          v = Verdict::warn;
          again = fmt::format(
              "did not reproduce: {:.0f} % at first, {:.0f} % measured again "
              "({}): re-run when the node is quiet",
              r->gbps_median / reference * 100,
              second ? second->gbps_median / reference * 100 : 0.0, busy_text(r->time_us.cv, load));
        } else if (busy) {
          v = Verdict::warn;
          again = fmt::format(
              "could not judge: the node was busy ({}; {:.0f} % of memcpy, "
              "twice); re-run when it is quiet",
              busy_text(std::max(r->time_us.cv, second->time_us.cv),
                        load.other_cores > first_load.other_cores ? load : first_load),
              second->gbps_median / reference * 100);
        }
        if (second) r = second;
      }
      Finding f{name(), where, v, r->gbps_median, reference, "GB/s", ""};
      f.why = !again.empty()       ? again
              : v == Verdict::pass ? std::string("the UCX engine keeps up with memcpy on the cores")
                                   : fmt::format(
                                         "the UCX engine reaches {:.0f} % of memcpy on the "
                                         "cores: look at UCX_TLS and the transports UCX "
                                         "chose",
                                         f.ratio() * 100);
      ctx.add_row(f);
    } catch (const std::exception& e) {
      ctx.add_row({name(), where, Verdict::warn, 0, 0, "GB/s",
                   fmt::format("the engine selftest did not run: {}", e.what())});
    }
  }

  // The engine's lanes to remote servers (one per --nic, or one per server),
  // each run every loop together with the others: a row per lane, held
  // against its peers and its NIC's line rate (judge_engine_lanes).
  void lanes(Context& ctx) const {
    const EngineTarget& t = ctx.engine_target();
    EngineClientConfig cfg;
    cfg.ops = {engine::Op::read};
    cfg.block = 1ULL << 20;
    cfg.nics = t.nics;
    const std::size_t servers = t.servers.size();
    cfg.lanes = servers > 1 && t.nics.size() == servers
                    ? 1
                    : std::max<int>(1, static_cast<int>(t.nics.size()));
    const Bytes parts = static_cast<Bytes>(cfg.lanes) * servers;
    const Bytes per_part = std::max<Bytes>(ctx.plan().size / parts / cfg.block, 4) * cfg.block;
    cfg.total = per_part * parts;
    cfg.loops = std::max(ctx.plan().iters, 10);
    cfg.warmup = 1;
    cfg.journal = false;
    cfg.peer_errors = true;  // another host: a lost server fails its lane, never hangs
    cfg.timeout_s = 10;
    cfg.nic_counters = true;  // each lane's NIC counters: evidence in its row
    try {
      auto host = make_backend("host");
      std::vector<std::unique_ptr<engine::ServerLink>> links;
      std::vector<EngineServer> targets;
      for (const auto& [h, port] : t.servers) {
        links.push_back(std::make_unique<engine::ServerLink>(h, port, t.token, engine_digest(cfg),
                                                             "host", per_part * cfg.lanes, 10, 10));
        targets.push_back({links.back().get(), fmt::format("{}:{}", h, port)});
      }
      EngineRun run = run_engine_client(targets, cfg, 0, *host);
      for (auto& l : links) l->bye();
      std::vector<EngineLaneFigures> figures;
      std::map<std::string, std::string> evidence;  // where -> what its NIC's counters say
      for (std::size_t i = 0; i < run.records.size(); ++i) {
        const Record& r = run.records[i];
        const auto server = r.get(engine_field::server).value_or("");
        const auto lane = r.get(engine_field::lane_id).value_or(-1);
        if (server == "all" || (cfg.lanes > 1 && lane < 0)) continue;  // sums
        const std::string nic = r.get(engine_field::nic).value_or("");
        std::string where =
            lane >= 0 ? fmt::format("lane {} to {}", lane, server) : "lane to " + server;
        if (!nic.empty()) where += fmt::format(" (nic {})", nic);
        evidence[where] = counter_evidence(r);
        if (r.status != Status::ok) {
          ctx.add_row({name(), where, Verdict::fail, 0, 0, "GB/s",
                       fmt::format("the lane failed: {}{}", r.reason, evidence[where])});
          continue;
        }
        EngineLaneFigures f{where, nic, nic.empty() ? 0 : nic_line_gbps(nic), {}};
        for (const double us : run.loops_us[i])
          f.gbps.push_back(us > 0 ? static_cast<double>(r.bytes) / us / 1e3 : 0);
        figures.push_back(std::move(f));
      }
      for (Finding& f : judge_engine_lanes(figures)) {
        f.why += evidence[f.where];
        ctx.add_row(f);
      }
    } catch (const std::exception& e) {  // a server named and not reached (or refused): FAIL
      ctx.add_row({name(), "lanes", Verdict::fail, 0, 0, "GB/s",
                   fmt::format("the engine's lanes did not run: {}", e.what())});
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_engine_check() { return std::make_unique<Engine>(); }

}  // namespace xb::doctor
