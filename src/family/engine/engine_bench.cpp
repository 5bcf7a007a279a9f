#include "family/engine/engine_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "core/pattern.hpp"
#include "core/stats.hpp"
#include "core/timer.hpp"

namespace xb {
namespace {

using engine::Op;

struct Timing {
  std::vector<double> loop_us;        // one per timed loop: the figure
  std::vector<double> req_us;         // per request (sync) or per batch (async)
  double submit_us = 0, wait_us = 0;  // async: mean per batch
};

// One loop: the whole -t moved in blocks of `bs`.
void one_loop(engine::Remote& remote, Op op, std::byte* local, Bytes total, Bytes bs,
              const EngineClientConfig& cfg, Timing* t) {
  const Bytes n = total / bs;
  if (!cfg.async) {
    for (Bytes i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      remote.transfer(op, {local + i * bs, i * bs, bs});
      if (t) t->req_us.push_back(elapsed_us(t0, Clock::now()));
    }
    return;
  }
  std::vector<engine::Xfer> batch;
  for (Bytes i = 0; i < n; i += static_cast<Bytes>(cfg.batch)) {
    batch.clear();
    for (Bytes j = i; j < std::min<Bytes>(n, i + static_cast<Bytes>(cfg.batch)); ++j)
      batch.push_back({local + j * bs, j * bs, bs});
    const auto t0 = Clock::now();
    remote.post(op, batch);
    const auto t1 = Clock::now();
    remote.wait();
    const auto t2 = Clock::now();
    if (t) {
      t->submit_us += elapsed_us(t0, t1);
      t->wait_us += elapsed_us(t1, t2);
      t->req_us.push_back(elapsed_us(t0, t2));
    }
  }
}

Record make_record(Op op, const EngineClientConfig& cfg, Bytes bs, const Timing& t,
                   std::optional<std::int64_t> bad) {
  Record r;
  r.kase = op == Op::read ? "read" : "write";
  r.method = cfg.async ? "async" : "sync";
  r.bytes = cfg.total;
  r.set_samples(t.loop_us);
  const Stats lat = compute_stats(t.req_us);
  const double batches = std::max<double>(1.0, static_cast<double>(t.req_us.size()));
  r.set(engine_field::mode, to_string(cfg.mode));
  r.set(engine_field::block, static_cast<std::int64_t>(bs));
  r.set(engine_field::requests, static_cast<std::int64_t>(cfg.total / bs));
  r.set(engine_field::lat_of, cfg.async ? "batch" : "request");
  r.set(engine_field::lat_p50_us, lat.median);
  r.set(engine_field::lat_p99_us, lat.p99);
  r.set(engine_field::lat_max_us, lat.max);
  if (cfg.async) {
    r.set(engine_field::batch, static_cast<std::int64_t>(cfg.batch));
    r.set(engine_field::submit_us, t.submit_us / batches);
    r.set(engine_field::wait_us, t.wait_us / batches);
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

// Verification: reads are checked here against the server's pattern, writes
// by the server against ours (it restores its pattern after checking).
std::optional<std::int64_t> check(engine::ServerLink& link, engine::Remote& remote, Op op,
                                  std::byte* local, const EngineClientConfig& cfg) {
  if (!cfg.check) return std::nullopt;
  if (op == Op::write) return link.verify(0, cfg.total, engine::kClientSeed);
  const auto bad = find_mismatch(std::span<const std::byte>(local, cfg.total), engine::kServerSeed,
                                 remote.pattern_offset());
  return bad ? static_cast<std::int64_t>(*bad) : -1;
}

void prepare_local(Op op, std::byte* local, Bytes total) {
  if (op == Op::write)
    fill_pattern(std::span(local, total), engine::kClientSeed, 0);
  else
    std::memset(local, 0x5A, total);  // poison: a read that moves nothing is caught
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
  return fmt::format("{} {} t={} k={} steps={} loops={} {}",
                     c.ops.size() == 2      ? "read,write"
                     : c.ops[0] == Op::read ? "read"
                                            : "write",
                     to_string(c.mode), c.total, c.block, c.block_steps, c.loops,
                     c.async ? fmt::format("async batch {}", c.batch) : std::string("sync"));
}

EngineRun run_engine_client(engine::ServerLink& link, const EngineClientConfig& cfg,
                            double connect_ms) {
  const auto blocks = engine_blocks(cfg);
  EngineRun run;
  if (cfg.mode != EngineMode::h2h) {
    for (Op op : cfg.ops)
      for (Bytes bs : blocks) {
        Record r = Record::waived(
            op == Op::read ? "read" : "write", cfg.async ? "async" : "sync", -1, -1, cfg.total,
            fmt::format("mode {} needs device memory registered with UCX: this version's "
                        "engine moves host memory only",
                        to_string(cfg.mode)));
        r.set(engine_field::mode, to_string(cfg.mode));
        r.set(engine_field::block, static_cast<std::int64_t>(bs));
        run.records.push_back(std::move(r));
      }
    return run;
  }
  if (cfg.total > link.segment().length)
    throw UsageError(fmt::format("-t {} is larger than this client's slot on the server ({})",
                                 format_size(cfg.total), format_size(link.segment().length)));
  engine::Worker worker;
  const auto r0 = Clock::now();
  engine::Region local(worker, cfg.total);  // UCX-allocated: reachable by shared memory
  const double register_ms = elapsed_us(r0, Clock::now()) / 1e3;
  std::byte* const buf = local.data();
  std::memset(buf, 0, cfg.total);
  engine::Remote remote(worker, link.segment(), cfg.timeout_s, cfg.peer_errors);
  for (Op op : cfg.ops) {
    for (Bytes bs : blocks) {
      prepare_local(op, buf, cfg.total);
      for (int w = 0; w < cfg.warmup; ++w) one_loop(remote, op, buf, cfg.total, bs, cfg, nullptr);
      Timing t;
      for (int l = 0; l < cfg.loops; ++l) {
        const auto t0 = Clock::now();
        one_loop(remote, op, buf, cfg.total, bs, cfg, &t);
        t.loop_us.push_back(elapsed_us(t0, Clock::now()));
      }
      run.records.push_back(make_record(op, cfg, bs, t, check(link, remote, op, buf, cfg)));
    }
  }
  run.summary = {{"ucx_version", engine::ucx_version()},
                 {"transports", remote.transports()},
                 {"err_mode", std::string(cfg.peer_errors ? "peer" : "none")},
                 {"connect_ms", connect_ms},
                 {"register_ms", register_ms}};
  return run;
}

}  // namespace xb
