#include "family/engine/engine_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <exception>
#include <barrier>
#include <future>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pattern.hpp"
#include "core/stats.hpp"
#include "core/timer.hpp"
#include "family/run.hpp"
#include "family/engine/engine_local.hpp"

namespace xb {
namespace {

using engine::Op;

struct Timing {
  std::vector<double> loop_us;        // one per timed loop: the figure
  std::vector<double> req_us;         // per request (sync) or per batch (async)
  double submit_us = 0, wait_us = 0;  // async: mean per batch
  std::vector<Clock::time_point> starts, ends;  // each timed loop's: a sum's time spans the parts'
};

// One loop: the whole -t moved in blocks of `bs`.
void one_loop(EngineLocal& local, Op op, Bytes total, Bytes bs, const EngineClientConfig& cfg,
              Timing* t) {
  const Bytes n = total / bs;
  if (!cfg.async) {
    for (Bytes i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      local.transfer(op, {i * bs, bs});
      if (t) t->req_us.push_back(elapsed_us(t0, Clock::now()));
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
  }
}

// A part's record: `bytes` of the slot moved per loop in blocks of `bs`.
Record make_record(Op op, const EngineClientConfig& cfg, EngineLane lane, Bytes bytes, Bytes bs,
                   const Timing& t, std::optional<std::int64_t> bad) {
  Record r;
  r.kase = op == Op::read ? "read" : "write";
  r.method = cfg.async ? "async" : "sync";
  r.bytes = bytes;
  r.set_samples(t.loop_us);
  const Stats lat = compute_stats(t.req_us);
  const double batches = std::max<double>(1.0, static_cast<double>(t.req_us.size()));
  r.set(engine_field::mode, to_string(cfg.mode));
  r.set(engine_field::lane, to_string(lane));
  r.set(engine_field::block, static_cast<std::int64_t>(bs));
  r.set(engine_field::requests, static_cast<std::int64_t>(bytes / bs));
  r.set(engine_field::lat_of, cfg.async ? "batch" : "request");
  r.set(engine_field::lat_p50_us, lat.median);
  r.set(engine_field::lat_p99_us, lat.p99);
  r.set(engine_field::lat_max_us, lat.max);
  if (cfg.async) {
    r.set(engine_field::batch, static_cast<std::int64_t>(cfg.batch));
    r.set(engine_field::submit_us, t.submit_us / batches);
    r.set(engine_field::wait_us, t.wait_us / batches);
  }
  if (cfg.window > 0) {
    r.set(engine_field::window, static_cast<std::int64_t>(cfg.window));
    r.set(engine_field::msg_rate,
          messages_per_second(static_cast<double>(bytes / bs), r.time_us.median));
  }
  if (bad) {
    r.verified = *bad < 0;
    if (*bad >= 0) {
      r.status = Status::failed;
      r.reason = fmt::format("verification failed: first wrong byte at offset {}", *bad);
    }
  }
  return r;
}

// A record of a part that could not measure this step.
Record failed_record(Op op, const EngineClientConfig& cfg, EngineLane lane, Bytes bytes, Bytes bs,
                     std::string reason) {
  Record r;
  r.kase = op == Op::read ? "read" : "write";
  r.method = cfg.async ? "async" : "sync";
  r.bytes = bytes;
  r.status = Status::failed;
  r.reason = std::move(reason);
  r.set(engine_field::mode, to_string(cfg.mode));
  r.set(engine_field::lane, to_string(lane));
  r.set(engine_field::block, static_cast<std::int64_t>(bs));
  r.set(engine_field::requests, static_cast<std::int64_t>(bytes / bs));
  return r;
}

// Verification: reads are checked here against the server's pattern, writes
// by the server against ours (it restores its pattern after checking).
std::optional<std::int64_t> check(engine::ServerLink& link, EngineLocal& local, const EnginePart& p,
                                  Op op, const EngineClientConfig& cfg) {
  if (!cfg.check) return std::nullopt;
  if (op == Op::write) {
    const std::int64_t bad = link.verify(p.base, p.length, engine::kClientSeed);
    return bad >= 0 ? bad - static_cast<std::int64_t>(p.base) : bad;
  }
  const std::vector<std::byte> got = local.contents();
  const auto bad = find_mismatch(std::span<const std::byte>(got), engine::kServerSeed,
                                 link.segment().pattern_offset + p.base);
  return bad ? static_cast<std::int64_t>(*bad) : -1;
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
  std::unique_ptr<engine::Worker> worker;
  std::unique_ptr<EngineLocal> local;
  double register_ms = 0;
  std::string lost;  // why this part stopped (a lost server), "" while it runs
  // This step's outcome.
  Timing t;
  std::optional<std::int64_t> bad;
  std::string error;
};

// One step (an op and a block size) of one part: its loops start with the
// other parts' (`gate`), the check after. An error ends the part's step.
void part_step(PartRun& pr, engine::ServerLink& link, Op op, Bytes bs, const EngineClientConfig& cfg,
               std::barrier<>* gate, std::mutex& link_mutex) {
  pr.t = {};
  pr.bad.reset();
  pr.error.clear();
  bool gated = gate != nullptr;
  int synced = 0;  // before_loop calls so far: a failed part still makes all of them
  const int syncs = cfg.warmup + cfg.loops;
  try {
    const auto sync = [&] {
      ++synced;
      if (cfg.before_loop) cfg.before_loop();
      if (gate) gate->arrive_and_wait();
    };
    prepare_local(op, *pr.local);
    for (int w = 0; w < cfg.warmup; ++w) {
      sync();
      one_loop(*pr.local, op, pr.part.length, bs, cfg, nullptr);
    }
    for (int l = 0; l < cfg.loops; ++l) {
      sync();
      const auto t0 = Clock::now();
      one_loop(*pr.local, op, pr.part.length, bs, cfg, &pr.t);
      const auto t1 = Clock::now();
      pr.t.loop_us.push_back(elapsed_us(t0, t1));
      pr.t.starts.push_back(t0);
      pr.t.ends.push_back(t1);
    }
    gated = false;  // every gate passed: the others no longer wait for this part
    const std::lock_guard lock(link_mutex);  // the parts of one server share its link
    pr.bad = check(link, *pr.local, pr.part, op, cfg);
  } catch (const Interrupted&) {
    if (gated) gate->arrive_and_drop();
    throw;
  } catch (const std::exception& e) {
    if (gated) gate->arrive_and_drop();
    pr.error = e.what();
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

// The sum of some parts' step: their bytes over each loop's span from the
// first part's start to the last part's end (the parts start together).
Record sum_record(Op op, const EngineClientConfig& cfg, EngineLane lane, Bytes bs,
                  const std::vector<const PartRun*>& parts, const std::vector<EngineServer>& servers,
                  std::vector<double>& span_us) {
  span_us.clear();
  Bytes bytes = 0;
  std::vector<std::string> broken;
  for (const PartRun* p : parts) {
    bytes += p->part.length;
    if (!p->error.empty() || !p->lost.empty() || (p->bad && *p->bad >= 0))
      broken.push_back(part_name(*p, servers));
  }
  if (!broken.empty()) {
    std::string who;
    for (const auto& b : broken) who += (who.empty() ? "" : ", ") + b;
    return failed_record(op, cfg, lane, bytes, bs,
                         fmt::format("no sum: {} of {} parts failed ({})", broken.size(),
                                     parts.size(), who));
  }
  for (int l = 0; l < cfg.loops; ++l) {
    Clock::time_point first = parts[0]->t.starts[static_cast<std::size_t>(l)];
    Clock::time_point last = parts[0]->t.ends[static_cast<std::size_t>(l)];
    for (const PartRun* p : parts) {
      first = std::min(first, p->t.starts[static_cast<std::size_t>(l)]);
      last = std::max(last, p->t.ends[static_cast<std::size_t>(l)]);
    }
    span_us.push_back(elapsed_us(first, last));
  }
  Record r;
  r.kase = op == Op::read ? "read" : "write";
  r.method = cfg.async ? "async" : "sync";
  r.bytes = bytes;
  r.set_samples(span_us);
  r.set(engine_field::mode, to_string(cfg.mode));
  r.set(engine_field::lane, to_string(lane));
  r.set(engine_field::block, static_cast<std::int64_t>(bs));
  r.set(engine_field::requests, static_cast<std::int64_t>(bytes / bs));
  if (cfg.async) r.set(engine_field::batch, static_cast<std::int64_t>(cfg.batch));
  if (cfg.window > 0) {
    r.set(engine_field::window, static_cast<std::int64_t>(cfg.window));
    r.set(engine_field::msg_rate,
          messages_per_second(static_cast<double>(bytes / bs), r.time_us.median));
  }
  if (cfg.check) r.verified = true;
  return r;
}

}  // namespace

const char* to_string(EngineMode m) {
  constexpr const char* names[] = {"h2h", "h2d", "d2h", "d2d"};
  return names[static_cast<int>(m)];
}

std::vector<Bytes> engine_blocks(const EngineClientConfig& cfg) {
  if (cfg.loops < 1 || cfg.block_steps < 1 || cfg.batch < 1 || cfg.warmup < 0)
    throw UsageError("--loops, --block-steps and --batch must be at least 1, -w at least 0");
  if (cfg.block > cfg.total)
    throw UsageError(
        fmt::format("-k {} is larger than -t {}", format_size(cfg.block), format_size(cfg.total)));
  std::vector<Bytes> out;
  for (int i = 0; i < cfg.block_steps; ++i) {
    const Bytes bs = cfg.block << i;
    if (bs > cfg.total)
      throw UsageError(fmt::format("--block-steps {}: block {} exceeds -t {}", cfg.block_steps,
                                   format_size(bs), format_size(cfg.total)));
    if (cfg.total % bs != 0)
      throw UsageError(fmt::format("-t {} is not a multiple of the block size {}",
                                   format_size(cfg.total), format_size(bs)));
    out.push_back(bs);
  }
  return out;
}

std::string engine_digest(const EngineClientConfig& c) {
  return fmt::format("{} {}{} t={} k={} steps={} loops={} {}",
                     c.ops.size() == 2      ? "read,write"
                     : c.ops[0] == Op::read ? "read"
                                            : "write",
                     to_string(c.mode),
                     c.lane == EngineLane::automatic ? "" : fmt::format(" lane={}", to_string(c.lane)),
                     c.total, c.block, c.block_steps, c.loops,
                     c.async ? fmt::format("async batch {}", c.batch) : std::string("sync"));
}

const char* to_string(EngineLane l) {
  switch (l) {
    case EngineLane::ucx:
      return "ucx";
    case EngineLane::staged:
      return "staged";
    case EngineLane::ipc:
      return "ipc";
    case EngineLane::automatic:
      break;
  }
  return "auto";
}

EngineLane choose_lane(EngineLane forced, const LaneFacts& f) {
  const bool ipc_ok = f.server_ipc && f.same_node && f.can_import;
  const bool registrable = !f.client_device || f.device_registrable;
  if (forced == EngineLane::ipc && !ipc_ok)
    throw UsageError(
        !f.server_ipc  ? std::string("--lane ipc: the server's region has no IPC handle (a host "
                                     "region, or a backend without device IPC)")
        : !f.same_node ? std::string("--lane ipc: the server runs on another node")
                       : fmt::format("--lane ipc: the {} backend cannot map IPC handles", f.backend));
  if (!f.server_rkey && !ipc_ok && forced != EngineLane::ipc)
    throw UsageError(fmt::format(
        "the server's region is device memory that UCX {} cannot register: only CUDA IPC on the "
        "server's node reaches it (run the client there with --backend cuda)",
        engine::ucx_version()));
  if (forced == EngineLane::ucx && !registrable)
    throw UsageError(fmt::format(
        "--lane ucx: this UCX ({}) cannot register {} device memory; use --lane staged",
        engine::ucx_version(), f.backend));
  if (forced == EngineLane::staged && !f.client_device)
    throw UsageError("--lane staged stages device memory: the mode's client side is host memory");
  if (forced != EngineLane::automatic) return forced;
  if (ipc_ok) return EngineLane::ipc;
  return registrable ? EngineLane::ucx : EngineLane::staged;
}

std::vector<std::pair<Bytes, Bytes>> stage_chunks(Bytes length, Bytes chunk) {
  std::vector<std::pair<Bytes, Bytes>> out;
  if (chunk == 0) return out;
  for (Bytes off = 0; off < length; off += chunk) out.emplace_back(off, std::min(chunk, length - off));
  return out;
}

bool device_memory_registrable(const Backend& b) {
  if (b.name() == "host") return true;  // NUMA-bound host memory
  if (b.name() == "cuda") return engine::ucx_supports_memory("cuda");
  return false;
}

Bytes engine_part_length(const EngineClientConfig& cfg, std::size_t servers) {
  const auto blocks = engine_blocks(cfg);
  if (cfg.lanes < 1 || cfg.lanes > kEngineMaxLanes)
    throw UsageError(fmt::format("--lanes {}: give 1 to {}", cfg.lanes, kEngineMaxLanes));
  const Bytes parts = static_cast<Bytes>(cfg.lanes) * std::max<std::size_t>(servers, 1);
  if (parts == 1) return cfg.total;
  const Bytes largest = blocks.back();
  if (cfg.total / largest < parts)
    throw UsageError(fmt::format(
        "{} lane{} x {} server{} = {} parts, but -t {} holds only {} block{} of {}: each part "
        "needs at least one (a larger -t, a smaller -k or fewer --block-steps)",
        cfg.lanes, cfg.lanes == 1 ? "" : "s", servers, servers == 1 ? "" : "s", parts,
        format_size(cfg.total), cfg.total / largest, cfg.total / largest == 1 ? "" : "s",
        format_size(largest)));
  const Bytes part = cfg.total / parts;
  if (cfg.total % parts != 0 || part % largest != 0)
    throw UsageError(fmt::format(
        "-t {} does not split into {} equal parts ({} lanes x {} servers) of whole {} blocks",
        format_size(cfg.total), parts, cfg.lanes, servers, format_size(largest)));
  return part;
}

EngineRun run_engine_client(engine::ServerLink& link, const EngineClientConfig& cfg,
                            double connect_ms, Backend& backend) {
  return run_engine_client(std::vector<EngineServer>{{&link, ""}}, cfg, connect_ms, backend);
}

EngineRun run_engine_client(const std::vector<EngineServer>& servers, const EngineClientConfig& cfg,
                            double connect_ms, Backend& backend) {
  const auto blocks = engine_blocks(cfg);
  EngineRun run;
  const bool dev = client_on_device(cfg.mode);
  if (dev && backend.name() != "host" && backend.name() != "cuda") {
    for (Op op : cfg.ops)
      for (Bytes bs : blocks) {
        Record r = Record::waived(
            op == Op::read ? "read" : "write", cfg.async ? "async" : "sync", -1, -1, cfg.total,
            fmt::format("mode {}: this version's engine cannot reach {} device memory (no lane "
                        "for it: UCX does not register it and there is no staging copy path)",
                        to_string(cfg.mode), backend.name()));
        r.set(engine_field::mode, to_string(cfg.mode));
        r.set(engine_field::block, static_cast<std::int64_t>(bs));
        run.records.push_back(std::move(r));
      }
    return run;
  }
  const Bytes part_len = engine_part_length(cfg, servers.size());
  const Bytes per_server = part_len * static_cast<Bytes>(cfg.lanes);
  std::vector<EngineLane> lanes;  // each server's lane kind
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
  // The parts: server-major, each server's lanes over its share of -t.
  std::vector<PartRun> parts;
  for (std::size_t s = 0; s < servers.size(); ++s)
    for (int l = 0; l < cfg.lanes; ++l) {
      PartRun pr;
      pr.server = s;
      pr.lane_id = cfg.lanes > 1 ? l : -1;
      // A NIC per lane; with one lane to each of several servers, a NIC per server.
      const std::size_t which = cfg.lanes == 1 && servers.size() > 1 ? s : static_cast<std::size_t>(l);
      pr.nic = cfg.nics.empty() ? "" : cfg.nics[which % cfg.nics.size()];
      pr.part.lane = lanes[s];
      pr.part.client_device = dev;
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
  const auto r0 = Clock::now();
  for (PartRun& pr : parts) {
    const auto p0 = Clock::now();
    pr.worker = std::make_unique<engine::Worker>(pr.nic);
    pr.local = make_engine_local(*pr.worker, backend, pr.part, servers[pr.server].link->segment(), cfg);
    pr.register_ms = elapsed_us(p0, Clock::now()) / 1e3;
  }
  const double register_ms = elapsed_us(r0, Clock::now()) / 1e3;
  const bool multi = parts.size() > 1;
  std::vector<std::mutex> link_mutex(servers.size());
  for (Op op : cfg.ops) {
    for (Bytes bs : blocks) {
      if (cfg.stop_point)
        cfg.stop_point();
      else
        stop_point();
      std::vector<PartRun*> alive;
      for (PartRun& pr : parts)
        if (pr.lost.empty()) alive.push_back(&pr);
      if (alive.size() == 1 && !multi) {  // one part: this thread (fan-in's gate is MPI)
        part_step(*alive[0], *servers[0].link, op, bs, cfg, nullptr, link_mutex[0]);
      } else if (!alive.empty()) {
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
      // The records: each part, each server's sum of lanes, the total.
      const auto emit = [&](Record r, const std::string& server, int lane_id,
                            const std::string& nic, std::vector<double> loops) {
        if (multi) {
          r.set(engine_field::server, server);
          r.set(engine_field::lane_id, static_cast<std::int64_t>(lane_id));
          if (!nic.empty()) r.set(engine_field::nic, nic);
        }
        run.records.push_back(std::move(r));
        run.loops_us.push_back(run.records.back().status == Status::ok ? std::move(loops)
                                                                        : std::vector<double>{});
        if (cfg.journal) record_done(run.records.back());
      };
      std::vector<double> span;
      for (std::size_t s = 0; s < servers.size(); ++s) {
        std::vector<const PartRun*> mine;
        for (PartRun& pr : parts) {
          if (pr.server != s) continue;
          mine.push_back(&pr);
          Record r = !pr.lost.empty()
                         ? failed_record(op, cfg, pr.part.lane, pr.part.length, bs,
                                         fmt::format("{} lost earlier: {}", part_name(pr, servers), pr.lost))
                     : !pr.error.empty()
                         ? failed_record(op, cfg, pr.part.lane, pr.part.length, bs,
                                         fmt::format("{}: {}", part_name(pr, servers), pr.error))
                         : make_record(op, cfg, pr.part.lane, pr.part.length, bs, pr.t, pr.bad);
          if (!pr.error.empty() && pr.lost.empty()) {
            pr.lost = pr.error;
            std::fprintf(stderr, "engine: %s failed: %s\n", part_name(pr, servers).c_str(),
                         pr.error.c_str());
          }
          emit(std::move(r), servers[s].name, pr.lane_id, pr.nic, pr.t.loop_us);
        }
        if (cfg.lanes > 1) {
          Record sum = sum_record(op, cfg, lanes[s], bs, mine, servers, span);
          emit(std::move(sum), servers[s].name, -1, "", span);
        }
      }
      if (servers.size() > 1) {
        std::vector<const PartRun*> all;
        for (const PartRun& pr : parts) all.push_back(&pr);
        Record sum = sum_record(op, cfg, lanes[0], bs, all, servers, span);
        emit(std::move(sum), "all", -1, "", span);
      }
      for (PartRun& pr : parts) pr.error.clear();
    }
  }
  std::string transports;
  for (const PartRun& pr : parts) {
    const std::string t = pr.local->transports();
    if (transports.find(t) == std::string::npos) transports += (transports.empty() ? "" : "; ") + t;
  }
  run.summary = {{"ucx_version", engine::ucx_version()},
                 {"transports", transports},
                 {"lane", std::string(to_string(lanes[0]))},
                 {"err_mode", std::string(cfg.peer_errors ? "peer" : "none")},
                 {"connect_ms", connect_ms},
                 {"register_ms", register_ms}};
  if (multi) {
    run.summary.emplace_back("lanes", static_cast<std::int64_t>(cfg.lanes));
    run.summary.emplace_back("servers", static_cast<std::int64_t>(servers.size()));
  }
  return run;
}

double jain_index(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (const double v : x) {
    sum += v;
    squares += v * v;
  }
  if (x.empty() || squares <= 0) return 0;
  return sum * sum / (static_cast<double>(x.size()) * squares);
}

std::vector<Record> fanin_records(std::vector<Record> clients,
                                  const std::vector<std::vector<double>>& loops_us) {
  if (clients.empty()) return clients;
  Bytes bytes = 0;
  std::vector<double> gbps;
  std::vector<std::string> broken;
  std::size_t loops = SIZE_MAX;
  for (std::size_t i = 0; i < clients.size(); ++i) {
    Record& c = clients[i];
    c.set(engine_field::client, static_cast<std::int64_t>(i));
    bytes += c.bytes;
    if (c.status != Status::ok || i >= loops_us.size() || loops_us[i].empty()) {
      broken.push_back(fmt::format("client {}: {}", i, c.reason.empty() ? "no figure" : c.reason));
      continue;
    }
    gbps.push_back(c.gbps_median);
    loops = std::min(loops, loops_us[i].size());
  }
  Record total;
  const Record& f = clients.front();
  total.kase = f.kase;
  total.method = f.method;
  total.bytes = bytes;
  for (const auto& key : {engine_field::mode, engine_field::lane})
    if (const auto v = f.get(key)) total.set(key, *v);
  if (const auto b = f.get(engine_field::block)) {
    total.set(engine_field::block, *b);
    if (*b > 0) total.set(engine_field::requests, static_cast<std::int64_t>(bytes) / *b);
  }
  if (const auto b = f.get(engine_field::batch)) total.set(engine_field::batch, *b);
  total.set(engine_field::client, std::int64_t{-1});
  if (!broken.empty()) {
    total.status = Status::failed;
    std::string why;
    for (const auto& b : broken) why += (why.empty() ? "" : "; ") + b;
    total.reason = fmt::format("no total: {} of {} clients failed ({})", broken.size(),
                               clients.size(), why);
  } else {
    // Each loop started together on every client: the server's loop ends
    // with its slowest client.
    std::vector<double> slowest(loops, 0.0);
    for (const auto& l : loops_us)
      for (std::size_t k = 0; k < loops; ++k) slowest[k] = std::max(slowest[k], l[k]);
    total.set_samples(slowest);
    double sum = 0;
    for (const double g : gbps) sum += g;
    for (Record& c : clients)
      if (c.status == Status::ok && sum > 0) c.set(engine_field::share, c.gbps_median / sum);
    total.set(engine_field::fairness, jain_index(gbps));
    bool verified = true, checked = true;
    for (const Record& c : clients) {
      checked = checked && c.verified.has_value();
      verified = verified && c.verified.value_or(true);
    }
    if (checked) total.verified = verified;
  }
  clients.push_back(std::move(total));
  return clients;
}

void check_engine_nic(const std::string& nic) {
  namespace fs = std::filesystem;
  const std::string dev = nic.substr(0, nic.find(':'));
  std::error_code ec;
  if (!dev.empty() && dev.find('/') == std::string::npos &&
      (fs::exists("/sys/class/net/" + dev, ec) || fs::exists("/sys/class/infiniband/" + dev, ec)))
    return;
  throw UsageError(fmt::format(
      "--nic {}: no such network or RDMA device here (/sys/class/net, /sys/class/infiniband)", nic));
}

std::vector<std::pair<std::string, int>> parse_engine_servers(const std::string& text) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& item : option_list("--connect", text, "10.0.0.1:20000,10.0.0.2:20000")) {
    const auto ep = engine::parse_endpoint(item, "--connect");
    for (const auto& seen : out)
      if (seen == ep)
        throw UsageError(fmt::format("--connect: {}:{} is given twice (a server once; --lanes "
                                     "gives it more lanes)",
                                     ep.first, ep.second));
    out.push_back(ep);
  }
  return out;
}

// ---- the server's region and the selftest ---------------------------------------

void check_engine_device(const Backend& b, int device, const char* option) {
  const auto n = static_cast<int>(b.devices().size());
  if (device < 0 || device >= n)
    throw UsageError(fmt::format("{} {}: the {} backend has {} device{} (0..{})", option, device,
                                 b.name(), n, n == 1 ? "" : "s", n - 1));
}

// The server's region on `device` of `b`: NUMA-bound memory on the host
// backend. Other backends' device memory is not host-addressable, and the
// server fills and checks its region through host access.
std::unique_ptr<Buffer> engine_server_region(Backend& b, int device, Bytes size, const char* option,
                                             engine::ServerConfig& sc) {
  check_engine_device(b, device, option);
  if (b.name() != "host" && b.name() != "cuda")
    throw UsageError(fmt::format("a server region in {} device memory is not in this version",
                                 b.name()));
  const Bytes free = b.free_memory(MemKind::device, device);
  if (free && size > free)
    throw UsageError(fmt::format("the region ({}) is larger than device {}'s free memory ({})",
                                 format_capacity(size), device, format_capacity(free)));
  auto region = b.allocate(MemKind::device, device, size);
  sc.memory = static_cast<std::byte*>(region->data());
  sc.kind = "device";
  sc.kind_note = engine_device_note(b, device);
  if (b.name() == "host") return region;  // NUMA-bound host memory: the server's own pointer
  // GPU memory: exported for IPC clients, registered with UCX only where
  // the UCX in use takes it, filled and checked through the backend.
  sc.registrable = engine::ucx_supports_memory("cuda");
  try {
    sc.ipc = b.export_buffer(*region);
  } catch (const NotSupported&) {
  }
  if (!sc.registrable && sc.ipc.empty())
    throw UsageError(fmt::format("{} device memory can be neither registered with UCX {} nor "
                                 "exported for IPC here",
                                 b.name(), engine::ucx_version()));
  Buffer* buf = region.get();
  static constexpr Bytes kChunk = 16ULL << 20;
  sc.fill = [&b, buf](std::uint64_t off, std::uint64_t len) {
    std::vector<std::byte> v;
    for (Bytes done = 0; done < len; done += kChunk) {
      v.resize(std::min(kChunk, len - done));
      fill_pattern(std::span(v), engine::kServerSeed, off + done);
      b.write(*buf, off + done, v);
    }
  };
  sc.check = [&b, buf](std::uint64_t off, std::uint64_t len, std::uint64_t seed,
                       std::uint64_t pattern_off) -> std::int64_t {
    std::vector<std::byte> v;
    for (Bytes done = 0; done < len; done += kChunk) {
      v.resize(std::min(kChunk, len - done));
      b.read(*buf, off + done, v);
      if (const auto bad = find_mismatch(std::span<const std::byte>(v), seed, pattern_off + done))
        return static_cast<std::int64_t>(done + *bad);
    }
    return -1;
  };
  return region;
}

std::string engine_device_note(const Backend& b, int device) {
  return fmt::format("device memory of {} device {} ({})", b.name(), device,
                     b.devices()[static_cast<std::size_t>(device)].name);
}

EngineRun engine_selftest(EngineClientConfig cfg, Backend& be, int server_device,
                          const std::vector<bool>& asyncs) {
  engine::ServerConfig sc;
  sc.port = 0;
  sc.size = std::max<Bytes>(cfg.total, 1ULL << 20);
  std::unique_ptr<Buffer> region;
  if (server_on_device(cfg.mode)) {
    region = engine_server_region(be, server_device, sc.size, "--server-device", sc);
  }
  sc.token = engine::make_token();
  sc.accept_wait_s = 30;
  std::promise<int> port;
  sc.on_listening = [&](int p) { port.set_value(p); };
  sc.log = [](const std::string&) {};
  auto server = std::async(std::launch::async, [&] { return engine::serve(sc); });
  auto ready = port.get_future();
  if (ready.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    server.get();  // rethrows the server's error
    throw RuntimeError("selftest server did not start");
  }
  EngineRun all;
  std::exception_ptr stopped;
  {
    const auto t0 = Clock::now();
    engine::ServerLink link("127.0.0.1", ready.get(), sc.token, "selftest", sc.kind, 10, 10);
    const double connect_ms = elapsed_us(t0, Clock::now()) / 1e3;
    try {
      for (bool async : asyncs) {
        cfg.async = async;
        EngineRun run = run_engine_client(link, cfg, connect_ms, be);
        for (auto& r : run.records) all.records.push_back(std::move(r));
        all.summary = std::move(run.summary);
      }
    } catch (const Interrupted&) {  // stopped: the server still ends, then the run
      stopped = std::current_exception();
    }
    link.bye();
  }
  server.get();
  if (stopped) std::rethrow_exception(stopped);
  return all;
}

}  // namespace xb
