#include "family/kv/kv_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pattern.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "engine/ucx.hpp"
#include "family/agree.hpp"
#include "family/cycles.hpp"
#include "family/host_pages.hpp"
#include "family/nic_fields.hpp"

namespace xb {
namespace {

using engine::Op;

std::uint64_t pool_seed(int rank) { return 0x6B5000ULL + static_cast<std::uint64_t>(rank); }
constexpr std::uint64_t kPutSeed = 0x6B5F00ULL;

// Rank r's j-th block comes from this peer (spread over the others).
int source_of(int r, int j, int n) { return (r + 1 + j % (n - 1)) % n; }

struct Mesh {
  engine::Worker worker;
  std::unique_ptr<Buffer> device;     // --mem device: under `local`
  std::unique_ptr<Buffer> huge_pool;  // --host-mem huge: under `pool` (and `local` in `device`)
  std::unique_ptr<engine::Region> pool, local;
  std::vector<std::unique_ptr<engine::Remote>> peers;  // by rank, null for self
};

void connect(Runtime& rt, Mesh& m, Bytes pool_bytes, const KvConfig& cfg, Backend& be) {
  if (cfg.huge_pages) {  // the backend's huge pages, registered with UCX
    m.huge_pool = be.allocate(MemKind::pageable, -1, pool_bytes);
    m.pool = std::make_unique<engine::Region>(m.worker, m.huge_pool->data(), pool_bytes);
  } else {
    m.pool = std::make_unique<engine::Region>(m.worker, pool_bytes);
  }
  if (cfg.device_mem || cfg.huge_pages) {
    const int dev = rt.local_rank() % static_cast<int>(be.devices().size());
    m.device = cfg.device_mem ? be.allocate(MemKind::device, dev, pool_bytes)
                              : be.allocate(MemKind::pageable, -1, pool_bytes);
    m.local = std::make_unique<engine::Region>(m.worker, m.device->data(), pool_bytes);
  } else {
    m.local = std::make_unique<engine::Region>(m.worker, pool_bytes);
  }
  fill_pattern(std::span(m.pool->data(), pool_bytes), pool_seed(rt.rank()), 0);
  const auto all = rt.allgather(engine::encode(m.pool->describe(0, pool_bytes, 0)));
  m.peers.resize(static_cast<std::size_t>(rt.size()));
  for (int p = 0; p < rt.size(); ++p)
    if (p != rt.rank())
      m.peers[static_cast<std::size_t>(p)] = std::make_unique<engine::Remote>(
          m.worker, engine::decode_descriptor(all[static_cast<std::size_t>(p)]), cfg.timeout_s,
          false);
}

// One Get round: this rank reads `b` blocks from its peers, batched per peer.
void get_round(Runtime& rt, Mesh& m, int b, Bytes bb) {
  const int n = rt.size();
  for (int p = 0; p < n; ++p) {
    if (p == rt.rank()) continue;
    std::vector<engine::Xfer> batch;
    for (int j = 0; j < b; ++j)
      if (source_of(rt.rank(), j, n) == p)
        batch.push_back(
            {m.local->data() + static_cast<Bytes>(j) * bb, static_cast<Bytes>(j) * bb, bb});
    if (!batch.empty()) m.peers[static_cast<std::size_t>(p)]->post(Op::read, batch);
  }
  for (auto& peer : m.peers)
    if (peer) peer->wait();
}

// One Put round: rank 0 writes `b` blocks to every peer.
void put_round(Runtime& rt, Mesh& m, int b, Bytes bb) {
  std::vector<engine::Xfer> batch;
  batch.reserve(static_cast<std::size_t>(b));
  for (int j = 0; j < b; ++j)
    batch.push_back({m.local->data() + static_cast<Bytes>(j) * bb, static_cast<Bytes>(j) * bb, bb});
  for (int p = 1; p < rt.size(); ++p) m.peers[static_cast<std::size_t>(p)]->post(Op::write, batch);
  for (auto& peer : m.peers)
    if (peer) peer->wait();
}

std::optional<Bytes> check_get(Runtime& rt, Mesh& m, int b, Bytes bb) {
  for (int j = 0; j < b; ++j) {
    const Bytes off = static_cast<Bytes>(j) * bb;
    const auto bad = find_mismatch(std::span<const std::byte>(m.local->data() + off, bb),
                                   pool_seed(source_of(rt.rank(), j, rt.size())), off);
    if (bad) return off + *bad;
  }
  return std::nullopt;
}

Record record(const char* kase, int rank, int b, Bytes bytes, Bytes bb,
              const std::vector<double>& us, std::optional<bool> ok) {
  Record r;
  r.kase = kase;
  r.method = "ucx";
  r.src = rank;
  r.bytes = bytes;
  r.set_samples(us);
  r.set(kv_field::blocks, std::int64_t{b});
  r.set(kv_field::block_bytes, static_cast<std::int64_t>(bb));
  r.verified = ok;
  if (ok && !*ok) {
    r.status = Status::failed;
    r.reason = "verification failed: a block holds the wrong bytes";
  }
  return r;
}

// The timed rounds' total time, s.
double seconds_of(const std::vector<double>& us) {
  double sum = 0;
  for (double u : us) sum += u;
  return sum / 1e6;
}

// Mean (get_avg) and max (get_max) over the ranks' get records of one round size.
void summarize(std::vector<Record>& all, int b, Bytes bb) {
  std::vector<double> med;
  bool ok = true;
  Bytes bytes = 0;
  for (const auto& r : all)
    if (r.kase == "get" && r.get_or(kv_field::blocks, std::int64_t{0}) == b) {
      med.push_back(r.time_us.median);
      ok = ok && r.verified.value_or(true);
      bytes = r.bytes;
    }
  if (med.empty()) return;
  double sum = 0;
  for (double x : med) sum += x;
  const double avg = sum / static_cast<double>(med.size());
  all.push_back(record("get_avg", -1, b, bytes, bb, {avg}, ok));
  all.push_back(
      record("get_max", -1, b, bytes, bb, {*std::max_element(med.begin(), med.end())}, ok));
}

}  // namespace

void validate_kv(Runtime& rt, const KvConfig& cfg) {
  std::string err;
  if (cfg.blocks.empty() || cfg.iters < 1 || cfg.warmup < 0 || cfg.block_bytes == 0)
    err = "kv needs --blocks, -n >= 1, -w >= 0 and a block size";
  for (int b : cfg.blocks)
    if (b < 1) err = "--blocks must be positive";
  if (err.empty()) {
    const Bytes need = 2 *
                       static_cast<Bytes>(*std::max_element(cfg.blocks.begin(), cfg.blocks.end())) *
                       cfg.block_bytes;
    const Bytes avail = available_memory();
    const auto local_ranks = static_cast<Bytes>(rt.single_host() ? rt.size() : 1);
    if (avail && need * local_ranks > avail)
      err = fmt::format("pools of {} per rank x {} ranks need {}, only {} is available",
                        format_capacity(need), local_ranks, format_capacity(need * local_ranks),
                        format_capacity(avail));
  }
  err = rt.agree(err);
  if (!err.empty()) throw UsageError(err);
}

std::vector<Record> run_kv(Runtime& rt, const KvConfig& cfg, Backend& backend) {
  std::vector<Record> mine;
  if (rt.size() < 2) {
    for (int b : cfg.blocks)
      mine.push_back(
          Record::waived("get", "ucx", -1, -1, static_cast<Bytes>(b) * cfg.block_bytes,
                         "needs at least 2 ranks: run under `mpiexec -n 3` or add --ranks 3"));
    return mine;
  }
  if (const std::string no_huge = rt.agree(use_host_pages(backend, cfg.huge_pages).reason);
      !no_huge.empty()) {
    for (int b : cfg.blocks)
      mine.push_back(
          Record::waived("get", "ucx", -1, -1, static_cast<Bytes>(b) * cfg.block_bytes, no_huge));
    return mine;
  }
  const Bytes bb = cfg.block_bytes;
  const int maxb = *std::max_element(cfg.blocks.begin(), cfg.blocks.end());
  Mesh m;
  if (auto err = agree_on(rt, [&] { connect(rt, m, static_cast<Bytes>(maxb) * bb, cfg, backend); });
      !err.empty())
    throw RuntimeError(err);
  // While waiting for others, keep serving their one-sided traffic (TCP).
  const std::function<void()> serve = [&m] { m.worker.progress(); };
  std::vector<Record> all;
  for (int b : cfg.blocks) {
    stop_point(&rt);  // every rank, in step
    mine.clear();
    const Bytes span = static_cast<Bytes>(b) * bb;
    // Get: everyone at once.
    std::memset(m.local->data(), 0x5A, span);
    std::vector<double> us;
    NicWindow nics;  // the timed rounds' NIC counters (and the barriers' few bytes)
    for (int i = 0; i < cfg.warmup + cfg.iters; ++i) {
      rt.barrier(serve);
      if (i == cfg.warmup) nics.open();
      const auto t0 = Clock::now();
      get_round(rt, m, b, bb);
      if (i >= cfg.warmup) us.push_back(elapsed_us(t0, Clock::now()));
    }
    std::optional<NicDelta> nic = nics.close(span);
    std::optional<bool> ok;
    rt.barrier(serve);  // peers may still be reading from us
    if (cfg.check) ok = !check_get(rt, m, b, bb);
    mine.push_back(record("get", rt.rank(), b, span, bb, us, ok));
    if (nic) set_nic_fields(mine.back(), *nic, seconds_of(us));
    // Put: rank 0 to every peer; peers check, then restore their pools.
    if (rt.rank() == 0) fill_pattern(std::span(m.local->data(), span), kPutSeed, 0);
    us.clear();
    for (int i = 0; i < cfg.warmup + cfg.iters; ++i) {
      rt.barrier(serve);
      if (i == cfg.warmup) nics.open();
      const auto t0 = Clock::now();
      if (rt.rank() == 0) put_round(rt, m, b, bb);
      if (i >= cfg.warmup) us.push_back(elapsed_us(t0, Clock::now()));
    }
    nic = nics.close(span);
    rt.barrier(serve);
    double bad = 0;
    if (cfg.check && rt.rank() != 0)
      bad = find_mismatch(std::span<const std::byte>(m.pool->data(), span), kPutSeed, 0) ? 1 : 0;
    fill_pattern(std::span(m.pool->data(), span), pool_seed(rt.rank()), 0);
    bad = rt.sum(bad);
    if (rt.rank() == 0) {
      mine.push_back(record("put", 0, b, span * static_cast<Bytes>(rt.size() - 1), bb, us,
                            cfg.check ? std::optional<bool>(bad == 0) : std::nullopt));
      if (nic) set_nic_fields(mine.back(), *nic, seconds_of(us));
    }
    rt.barrier(serve);
    // This block count's records from every rank, and their average and
    // slowest: final, to the run's output (on rank 0) before the next.
    std::vector<Record> block;
    for (const auto& w : rt.allgather(records_to_wire(mine)))
      for (auto& r : records_from_wire(w)) block.push_back(std::move(r));
    summarize(block, b, bb);
    for (auto& r : block) {
      record_done(r);
      all.push_back(std::move(r));
    }
  }
  return all;
}

}  // namespace xb
