// `run_engine_client`: the parts of a run (a lane to one server each), their
// steps (an op and a block size), on a thread per part when there are
// several, and the records of each step: a part's, a server's sum of lanes,
// the total over servers.
#include <fmt/format.h>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "core/corruption.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/nic_counters.hpp"
#include "core/pattern.hpp"
#include "core/timer.hpp"
#include "family/engine/engine_bench.hpp"
#include "family/engine/engine_local.hpp"
#include "family/engine/engine_records.hpp"
#include "family/host_pages.hpp"

namespace xb {
namespace {

using engine::Op;

// Whether the server is still there, asked of its control connection
// between loops (outside the timed span) and, inside a long loop, after
// every kEvery requests or kEveryBytes moved: a poll() of about a
// microsecond, too rare to show in a figure. A server on this host is read
// through shared memory that stays readable after its process died, so
// without this a dead server's part would time the reads of a corpse.
class AliveCheck {
 public:
  explicit AliveCheck(const engine::ServerLink& link) : link_(link) {}
  void now() {
    requests_ = bytes_ = 0;
    if (std::string why = link_.gone(); !why.empty()) throw RuntimeError(why);
  }
  void moved(Bytes requests, Bytes bytes) {
    requests_ += requests;
    bytes_ += bytes;
    if (requests_ >= kEvery || bytes_ >= kEveryBytes) now();
  }

 private:
  static constexpr Bytes kEvery = 4096;
  static constexpr Bytes kEveryBytes = 256ULL << 20;
  const engine::ServerLink& link_;
  Bytes requests_ = 0, bytes_ = 0;
};

// One loop: the whole -t moved in blocks of `bs`.
void one_loop(EngineLocal& local, Op op, Bytes total, Bytes bs, const EngineClientConfig& cfg,
              EngineTiming* t, AliveCheck& alive) {
  const Bytes n = total / bs;
  if (!cfg.async) {
    for (Bytes i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      local.transfer(op, {i * bs, bs});
      if (t) t->req_us.push_back(elapsed_us(t0, Clock::now()));
      alive.moved(1, bs);
    }
    return;
  }
  std::vector<EngineReq> batch;
  for (Bytes i = 0; i < n; i += static_cast<Bytes>(cfg.batch)) {
    batch.clear();
    for (Bytes j = i; j < std::min<Bytes>(n, i + static_cast<Bytes>(cfg.batch)); ++j)
      batch.push_back({j * bs, bs});
    const auto t0 = Clock::now();
    local.post(op, batch);
    const auto t1 = Clock::now();
    local.wait();
    const auto t2 = Clock::now();
    if (t) {
      t->submit_us += elapsed_us(t0, t1);
      t->wait_us += elapsed_us(t1, t2);
      t->req_us.push_back(elapsed_us(t0, t2));
    }
    alive.moved(batch.size(), batch.size() * bs);
  }
}

// Verification: reads are checked here against the server's pattern, writes
// by the server against ours (it restores its pattern after checking).
std::optional<std::int64_t> check(engine::ServerLink& link, EngineLocal& local, const EnginePart& p,
                                  Op op, const EngineClientConfig& cfg) {
  if (!cfg.check) return std::nullopt;
  if (op == Op::write) {
    // The server's answer counts from the part's start (its verify's offset).
    return link.verify(p.base, p.length, engine::kClientSeed);
  }
  const std::vector<std::byte> got = local.contents();
  const auto bad = find_mismatch(std::span<const std::byte>(got), engine::kServerSeed,
                                 link.segment().pattern_offset + p.base);
  return bad ? static_cast<std::int64_t>(*bad) : -1;
}

// --check every: loop `loop`'s first wrong byte as a FirstBad (reads: here,
// with the bytes and their count; writes: the server names the offset).
std::optional<FirstBad> check_loop(engine::ServerLink& link, EngineLocal& local,
                                   const EnginePart& p, Op op, std::int64_t loop,
                                   const std::string& where) {
  if (op == Op::write) {
    const std::int64_t bad = link.verify(p.base, p.length, engine::kClientSeed);
    if (bad < 0) return std::nullopt;
    const auto at = static_cast<std::uint64_t>(bad);  // from the part's start
    return FirstBad{loop,
                    where + " (the server checked)",
                    at,
                    "byte",
                    fmt::format("{:#04x}", std::to_integer<std::uint8_t>(
                                               pattern_byte(engine::kClientSeed, p.base + at))),
                    "?",
                    "",
                    0,  // the server names the first wrong byte, not how many
                    ""};
  }
  const std::vector<std::byte> got = local.contents();
  return pattern_bad(got, engine::kServerSeed, link.segment().pattern_offset + p.base, loop, where);
}

void prepare_local(Op op, EngineLocal& local) {
  if (op == Op::write)
    local.fill();
  else
    local.poison();  // a read that moves nothing is caught
}

// One part of a run: a lane to one server, on its own UCX worker (its own
// context: its own NIC with --nic) and, with more than one part, its own
// thread.
struct PartRun {
  EnginePart part;
  std::size_t server = 0;  // index into the run's servers
  int lane_id = -1;        // -1: the server's only lane
  std::string nic;
  std::string name;  // part_name(): where it is, for reasons
  std::unique_ptr<engine::Worker> worker;
  std::unique_ptr<EngineLocal> local;
  double register_ms = 0;
  std::string lost;  // why this part stopped (a lost server), "" while it runs
  // This step's outcome; every NIC's counters around its timed loops
  // (cfg.nic_counters).
  EngineTiming t;
  std::vector<NicSample> nics_before, nics_after;
  std::optional<std::int64_t> bad;
  std::string error;

  bool broken() const { return !error.empty() || !lost.empty() || (bad && *bad >= 0); }
};

// One step (an op and a block size) of one part: its loops start with the
// other parts' (`gate`), the check after. An error ends the part's step.
void part_step(PartRun& pr, engine::ServerLink& link, Op op, Bytes bs,
               const EngineClientConfig& cfg, std::barrier<>* gate, std::mutex& link_mutex) {
  pr.t = {};
  pr.nics_before.clear();
  pr.nics_after.clear();
  pr.bad.reset();
  pr.error.clear();
  bool gated = gate != nullptr;
  int synced = 0;  // before_loop calls so far: a failed part still makes all of them
  // --check every: a second meeting after each timed loop, so no part checks
  // (a server-side scan for writes) while another is still timing.
  const int syncs = cfg.warmup + cfg.loops * (cfg.check_every ? 2 : 1);
  try {
    const auto sync = [&] {
      ++synced;
      if (cfg.before_loop) cfg.before_loop();
      if (gate) gate->arrive_and_wait();
    };
    AliveCheck alive(link);
    prepare_local(op, *pr.local);
    for (int w = 0; w < cfg.warmup; ++w) {
      sync();
      alive.now();
      one_loop(*pr.local, op, pr.part.length, bs, cfg, nullptr, alive);
    }
    // Before the gate of the first timed loop, so the loops still start together.
    if (cfg.nic_counters) pr.nics_before = sample_nics({});
    if (cfg.check_every && cfg.warmup > 0) {  // the warm-up's data must not pass loop 0
      if (op == Op::write) {
        const std::lock_guard lock(link_mutex);
        (void)link.verify(pr.part.base, pr.part.length, engine::kClientSeed);  // restores
      } else {
        prepare_local(op, *pr.local);
      }
    }
    for (int l = 0; l < cfg.loops; ++l) {
      if (cfg.check_every && l > 0 && op == Op::read) prepare_local(op, *pr.local);  // poisoned
      sync();
      alive.now();
      const auto t0 = Clock::now();
      one_loop(*pr.local, op, pr.part.length, bs, cfg, &pr.t, alive);
      const auto t1 = Clock::now();
      pr.t.loop_us.push_back(elapsed_us(t0, t1));
      pr.t.starts.push_back(t0);
      pr.t.ends.push_back(t1);
      if (!cfg.check_every) continue;
      sync();  // every part's loop is over before any checks
      const std::lock_guard lock(link_mutex);
      pr.t.checks.add(l, check_loop(link, *pr.local, pr.part, op, l, pr.name));
    }
    if (cfg.nic_counters) pr.nics_after = sample_nics({});
    gated = false;  // every gate passed: the others no longer wait for this part
    alive.now();    // the last loop's reads came from a live server
    const std::lock_guard lock(link_mutex);  // the parts of one server share its link
    if (cfg.check_every)                     // checked loop by loop: the first wrong byte, if any
      pr.bad = pr.t.checks.first() ? static_cast<std::int64_t>(pr.t.checks.first()->offset) : -1;
    else
      pr.bad = check(link, *pr.local, pr.part, op, cfg);
  } catch (const Interrupted&) {
    if (gated) gate->arrive_and_drop();
    throw;
  } catch (const std::exception& e) {
    if (gated) gate->arrive_and_drop();
    pr.error = e.what();
    // said at once (a lost server while the others run on), the record at the step's end
    std::fprintf(stderr, "engine: %s failed: %s\n", pr.name.c_str(), pr.error.c_str());
    // fan-in's gate is collective: the other ranks still start their loops
    if (cfg.before_loop)
      for (; synced < syncs; ++synced) cfg.before_loop();
  }
}

// Where a part is, for reasons: "lane 1 of 10.0.0.2:20000 (nic veth1)".
std::string part_name(const PartRun& pr, const std::vector<EngineServer>& servers) {
  std::string s = pr.lane_id >= 0 ? fmt::format("lane {}", pr.lane_id) : std::string("the lane");
  if (!servers[pr.server].name.empty()) s += fmt::format(" to {}", servers[pr.server].name);
  if (!pr.nic.empty()) s += fmt::format(" (nic {})", pr.nic);
  return s;
}

// A run that cannot go (a mode whose client memory no lane reaches on this
// backend, huge pages the system does not have): every step waived, with
// the reason.
EngineRun waived_run(const EngineClientConfig& cfg, const std::vector<Bytes>& blocks,
                     const std::string& why) {
  EngineRun run;
  for (Op op : cfg.ops)
    for (Bytes bs : blocks) {
      Record r = Record::waived(op == Op::read ? "read" : "write", cfg.async ? "async" : "sync", -1,
                                -1, cfg.total, why);
      r.set(engine_field::mode, to_string(cfg.mode));
      r.set(engine_field::block, static_cast<std::int64_t>(bs));
      run.records.push_back(std::move(r));
    }
  return run;
}

// Each server's lane kind, once its slot is known to hold its share of -t
// (`per_server` bytes).
std::vector<EngineLane> server_lanes(const std::vector<EngineServer>& servers,
                                     const EngineClientConfig& cfg, Bytes per_server,
                                     const Backend& backend) {
  const bool dev = client_on_device(cfg.mode);
  std::vector<EngineLane> lanes;
  for (const EngineServer& sv : servers) {
    const engine::SegmentDescriptor& seg = sv.link->segment();
    if (per_server > seg.length)
      throw UsageError(
          servers.size() == 1
              ? fmt::format("-t {} is larger than this client's slot on the server ({})",
                            format_size(cfg.total), format_size(seg.length))
              : fmt::format("-t {} gives {} to each of {} servers, more than this client's slot "
                            "on {} ({})",
                            format_size(cfg.total), format_size(per_server), servers.size(),
                            sv.name, format_size(seg.length)));
    LaneFacts facts;
    facts.client_device = dev;
    facts.device_registrable = dev && device_memory_registrable(backend);
    facts.server_rkey = !seg.rkey.empty();
    facts.server_ipc = !seg.ipc.empty();
    facts.same_node = engine::on_this_node(seg.node);
    facts.can_import = backend.capabilities().device_ipc;
    facts.backend = backend.name();
    lanes.push_back(choose_lane(cfg.lane, facts));
  }
  return lanes;
}

// The parts: server-major, each server's lanes over its share of -t, each
// lane with its NIC and device. Throws UsageError for two ipc lanes to one
// server on one device.
std::vector<PartRun> plan_parts(std::size_t servers, const std::vector<EngineLane>& lanes,
                                const EngineClientConfig& cfg, Bytes part_len) {
  std::vector<PartRun> parts;
  for (std::size_t s = 0; s < servers; ++s)
    for (int l = 0; l < cfg.lanes; ++l) {
      PartRun pr;
      pr.server = s;
      pr.lane_id = cfg.lanes > 1 ? l : -1;
      // A NIC per lane; with one lane to each of several servers, a NIC per server.
      const std::size_t which = cfg.lanes == 1 && servers > 1 ? s : static_cast<std::size_t>(l);
      pr.nic = cfg.nics.empty() ? "" : cfg.nics[which % cfg.nics.size()];
      pr.part.lane = lanes[s];
      pr.part.client_device = client_on_device(cfg.mode);
      pr.part.device = cfg.devices.empty()
                           ? cfg.device
                           : cfg.devices[static_cast<std::size_t>(l) % cfg.devices.size()];
      pr.part.base = part_len * static_cast<Bytes>(l);
      pr.part.length = part_len;
      parts.push_back(std::move(pr));
    }
  for (const PartRun& a : parts)
    for (const PartRun& b : parts)
      if (&a < &b && a.server == b.server && a.part.lane == EngineLane::ipc &&
          a.part.device == b.part.device)
        throw UsageError(fmt::format(
            "--lanes {}: ipc lanes map the server's region once per device; give each lane its "
            "own device (--device 0,1,...)",
            cfg.lanes));
  return parts;
}

// Each part's worker and memory (registered, mapped or staged); returns the
// milliseconds all of it took.
double register_parts(std::vector<PartRun>& parts, const std::vector<EngineServer>& servers,
                      Backend& backend, const EngineClientConfig& cfg) {
  const auto r0 = Clock::now();
  for (PartRun& pr : parts) {
    const auto p0 = Clock::now();
    pr.worker = std::make_unique<engine::Worker>(pr.nic);
    pr.local =
        make_engine_local(*pr.worker, backend, pr.part, servers[pr.server].link->segment(), cfg);
    pr.register_ms = elapsed_us(p0, Clock::now()) / 1e3;
  }
  return elapsed_us(r0, Clock::now()) / 1e3;
}

// One step of every part not lost: one part on this thread (fan-in's gate
// is MPI), several on a thread each, every loop started together. A stop
// signal in any part stops the run.
void run_step(std::vector<PartRun>& parts, const std::vector<EngineServer>& servers, Op op,
              Bytes bs, const EngineClientConfig& cfg, std::vector<std::mutex>& link_mutex) {
  std::vector<PartRun*> alive;
  for (PartRun& pr : parts)
    if (pr.lost.empty()) alive.push_back(&pr);
  if (alive.empty()) return;
  if (parts.size() == 1) {
    part_step(*alive[0], *servers[0].link, op, bs, cfg, nullptr, link_mutex[0]);
    return;
  }
  std::barrier<> gate(static_cast<std::ptrdiff_t>(alive.size()));
  std::vector<std::exception_ptr> stops(alive.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < alive.size(); ++i)
    threads.emplace_back([&, i] {
      PartRun& pr = *alive[i];
      try {
        part_step(pr, *servers[pr.server].link, op, bs, cfg, &gate, link_mutex[pr.server]);
      } catch (...) {
        stops[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : stops)
    if (e) std::rethrow_exception(e);
}

// A part's record of this step; a part that failed now is lost from here on
// (part_step said so on stderr).
Record part_record(PartRun& pr, Op op, Bytes bs, const EngineClientConfig& cfg) {
  Record r = !pr.lost.empty()
                 ? engine_failed_record(op, cfg, pr.part.lane, pr.part.length, bs,
                                        fmt::format("{} lost earlier: {}", pr.name, pr.lost))
             : !pr.error.empty()
                 ? engine_failed_record(op, cfg, pr.part.lane, pr.part.length, bs,
                                        fmt::format("{}: {}", pr.name, pr.error))
                 : engine_part_record(op, cfg, pr.part.lane, pr.part.length, bs, pr.t, pr.bad);
  if (!pr.error.empty() && pr.lost.empty()) pr.lost = pr.error;
  return r;
}

// A part's NIC fields from its counters; a WARN on stderr where its bytes
// went through another NIC than its --nic.
void nic_fields(Record& r, const PartRun& pr, const EngineClientConfig& cfg) {
  if (pr.nics_before.empty() || pr.nics_after.empty()) return;
  double loops_us = 0;
  for (const double us : pr.t.loop_us) loops_us += us;
  const std::string warn = set_nic_fields(r, nic_deltas(pr.nics_before, pr.nics_after), pr.nic,
                                          pr.part.length * static_cast<Bytes>(cfg.loops), loops_us);
  if (!warn.empty())
    std::fprintf(
        stderr, "%s",
        fmt::format("engine: WARN: {}, {} of {} blocks: {}\n", pr.name, r.kase,
                    format_size(static_cast<Bytes>(r.get_or(engine_field::block, std::int64_t{0}))),
                    warn)
            .c_str());
}

// A sum's view of a part: its bytes and loops, or its name where it broke.
EngineSumPart sum_part(const PartRun& pr) {
  return {pr.part.length, &pr.t, pr.broken() ? pr.name : std::string()};
}

// The records of one step: each part, each server's sum of lanes (with
// lanes), the total over servers (with several); with more than one part
// each carries its server, lane and NIC.
void step_records(std::vector<PartRun>& parts, const std::vector<EngineServer>& servers,
                  const std::vector<EngineLane>& lanes, Op op, Bytes bs,
                  const EngineClientConfig& cfg, EngineRun& run) {
  const bool multi = parts.size() > 1;
  const auto emit = [&](Record r, const std::string& server, int lane_id, const std::string& nic,
                        std::vector<double> loops, const PartRun* pr = nullptr) {
    if (multi) {
      r.set(engine_field::server, server);
      r.set(engine_field::lane_id, static_cast<std::int64_t>(lane_id));
      if (!nic.empty()) r.set(engine_field::nic, nic);
    }
    if (pr && r.status == Status::ok) nic_fields(r, *pr, cfg);
    run.records.push_back(std::move(r));
    run.loops_us.push_back(run.records.back().status == Status::ok ? std::move(loops)
                                                                   : std::vector<double>{});
    if (cfg.journal) record_done(run.records.back());
  };
  std::vector<double> span;
  for (std::size_t s = 0; s < servers.size(); ++s) {
    std::vector<EngineSumPart> mine;
    for (PartRun& pr : parts) {
      if (pr.server != s) continue;
      Record r = part_record(pr, op, bs, cfg);
      mine.push_back(sum_part(pr));
      emit(std::move(r), servers[s].name, pr.lane_id, pr.nic, pr.t.loop_us, &pr);
    }
    if (cfg.lanes > 1) {
      Record sum = engine_sum_record(op, cfg, lanes[s], bs, mine, span);
      emit(std::move(sum), servers[s].name, -1, "", span);
    }
  }
  if (servers.size() > 1) {
    std::vector<EngineSumPart> all;
    all.reserve(parts.size());
    for (const PartRun& pr : parts) all.push_back(sum_part(pr));
    Record sum = engine_sum_record(op, cfg, lanes[0], bs, all, span);
    emit(std::move(sum), "all", -1, "", span);
  }
  for (PartRun& pr : parts) pr.error.clear();
}

// The run's summary: UCX, the transports its parts use, the lane, the
// error mode, the set-up times; lanes and servers where there are parts.
Params run_summary(const std::vector<PartRun>& parts, std::size_t servers,
                   const std::vector<EngineLane>& lanes, const EngineClientConfig& cfg,
                   double connect_ms, double register_ms) {
  std::string transports;
  for (const PartRun& pr : parts) {
    const std::string t = pr.local->transports();
    if (transports.find(t) == std::string::npos) transports += (transports.empty() ? "" : "; ") + t;
  }
  Params summary = {{"ucx_version", engine::ucx_version()},
                    {"transports", transports},
                    {"lane", std::string(to_string(lanes[0]))},
                    {"err_mode", std::string(cfg.peer_errors ? "peer" : "none")},
                    {"connect_ms", connect_ms},
                    {"register_ms", register_ms}};
  if (parts.size() > 1) {
    summary.emplace_back("lanes", static_cast<std::int64_t>(cfg.lanes));
    summary.emplace_back("servers", static_cast<std::int64_t>(servers));
  }
  return summary;
}

}  // namespace

EngineRun run_engine_client(engine::ServerLink& link, const EngineClientConfig& cfg,
                            double connect_ms, Backend& backend) {
  return run_engine_client(std::vector<EngineServer>{{&link, ""}}, cfg, connect_ms, backend);
}

EngineRun run_engine_client(const std::vector<EngineServer>& servers, const EngineClientConfig& cfg,
                            double connect_ms, Backend& backend) {
  const auto blocks = engine_blocks(cfg);
  if (client_on_device(cfg.mode) && backend.name() != "host" && backend.name() != "cuda")
    return waived_run(
        cfg, blocks,
        fmt::format("mode {}: this version's engine cannot reach {} device memory (no "
                    "lane for it: UCX does not register it and there is no staging "
                    "copy path)",
                    to_string(cfg.mode), backend.name()));
  if (const Support s = use_host_pages(backend, cfg.huge_pages); !s.ok)
    return waived_run(cfg, blocks, s.reason);
  const Bytes part_len = engine_part_length(cfg, servers.size());
  const std::vector<EngineLane> lanes =
      server_lanes(servers, cfg, part_len * static_cast<Bytes>(cfg.lanes), backend);
  std::vector<PartRun> parts = plan_parts(servers.size(), lanes, cfg, part_len);
  for (PartRun& pr : parts) pr.name = part_name(pr, servers);
  const double register_ms = register_parts(parts, servers, backend, cfg);
  std::vector<std::mutex> link_mutex(servers.size());
  EngineRun run;
  for (Op op : cfg.ops) {
    for (Bytes bs : blocks) {
      if (cfg.stop_point)
        cfg.stop_point();
      else
        stop_point();
      run_step(parts, servers, op, bs, cfg, link_mutex);
      const auto first = static_cast<std::ptrdiff_t>(run.records.size());
      step_records(parts, servers, lanes, op, bs, cfg, run);
      if (cfg.after_step)
        cfg.after_step({run.records.begin() + first, run.records.end()},
                       {run.loops_us.begin() + first, run.loops_us.end()});
    }
  }
  run.summary = run_summary(parts, servers.size(), lanes, cfg, connect_ms, register_ms);
  return run;
}

}  // namespace xb
