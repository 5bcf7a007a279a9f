#include "family/latency/latency_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/chase.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pattern.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "family/cycles.hpp"

namespace xb {
namespace {

constexpr std::uint64_t kChainSeed = 0x1a7e9c7ULL;
constexpr int kTagBase = 7100;  // ping-pong tags: one per size

std::uint64_t pattern_seed(int rank) {
  return 0x1a7e9c7ULL * 1000003ULL + static_cast<std::uint64_t>(rank);
}

int chase_samples(const LatencyConfig& cfg) { return cfg.iters.value_or(200); }
int chase_warmup(const LatencyConfig& cfg) { return cfg.warmup.value_or(10); }

// The memories a chase reads, in order: host memory first on a device
// backend (-1), then every device's (on the host backend host memory is a
// node's, so the devices cover it).
std::vector<int> chase_memories(const Backend& b) {
  std::vector<int> m;
  if (b.name() != "host") m.push_back(-1);
  for (const auto& d : b.devices()) m.push_back(d.id);
  return m;
}

std::string chase_method(const Backend& b) { return b.name() == "host" ? "core" : "sm"; }

Record chase_record(const Backend& b, int memory, int chaser) {
  Record r;
  r.kase = "chase";
  r.method = chase_method(b);
  r.src = memory;  // the data comes from the memory ...
  r.dst = chaser;  // ... to the device whose cores load it
  r.bytes = kChaseLine;
  return r;
}

std::string link_of(const Backend& b, int memory, int chaser) {
  if (memory < 0) return "host memory";
  try {
    return b.link_type(chaser, memory);
  } catch (const std::exception&) {
    return "?";
  }
}

// One memory's chain, chased by every device in turn. Rank 0 only; every
// rank passes the same stop points (one per pair).
void chase_memory(Runtime& rt, Backend& b, const LatencyConfig& cfg, int memory,
                  std::vector<Record>& out) {
  const int ndev = static_cast<int>(b.devices().size());
  std::unique_ptr<Chain> chain;
  std::string why;
  Status status = Status::ok;
  try {
    chain = b.make_chain(memory < 0 ? MemKind::pinned : MemKind::device, std::max(memory, 0),
                         cfg.chain, kChainSeed + static_cast<std::uint64_t>(memory + 1));
  } catch (const NotSupported& e) {
    status = Status::waived;
    why = e.what();
  } catch (const std::exception& e) {
    status = Status::failed;
    why = fmt::format("cannot make the chain: {}", e.what());
  }
  for (int chaser = 0; chaser < ndev; ++chaser) {
    stop_point(&rt);
    Record r = chase_record(b, memory, chaser);
    r.set(latency_field::sample,
          fmt::format("ns per load: one chase of {} dependent loads / {}", cfg.loads, cfg.loads));
    r.set(latency_field::link, link_of(b, memory, chaser));
    if (chain) {
      r.set(latency_field::chain_bytes, static_cast<std::int64_t>(chain->bytes()));
      r.set(latency_field::lines, static_cast<std::int64_t>(chain->bytes() / kChaseLine));
      r.set(latency_field::loads, std::int64_t{cfg.loads});
      try {
        std::vector<double> us =
            chain->chase(chaser, cfg.loads, chase_samples(cfg), chase_warmup(cfg));
        for (double& v : us) v /= 1000.0;  // ns per load -> the record's microseconds
        r.set_samples(us);
        if (cfg.check) {
          r.verified = chain->verify(chaser);
          if (!*r.verified) {
            r.status = Status::failed;
            r.reason = fmt::format("the chain does not visit each of its {} lines once",
                                   chain->bytes() / kChaseLine);
          }
        }
      } catch (const NotSupported& e) {
        r.status = Status::waived;
        r.reason = e.what();
      } catch (const std::exception& e) {
        r.status = Status::failed;
        r.reason = e.what();
      }
    } else {
      r.status = status;
      r.reason = why;
    }
    out.push_back(std::move(r));
    record_done(out.back());
  }
}

std::vector<Record> chases(Runtime& rt, Backend& b, const LatencyConfig& cfg) {
  std::vector<Record> out;
  // Rank 0 plans; every rank passes as many stop points as it has pairs.
  const std::vector<int> memories = chase_memories(b);
  const int ndev = static_cast<int>(b.devices().size());
  const int pairs =
      std::stoi(rt.broadcast_text(std::to_string(static_cast<int>(memories.size()) * ndev), 0));
  if (!rt.root()) {
    for (int i = 0; i < pairs; ++i) stop_point(&rt);
    return out;
  }
  for (int memory : memories) chase_memory(rt, b, cfg, memory, out);
  return out;
}

// One side's round trips: the initiator (rank 0) times each from its send
// to the echo's arrival; the other receives and sends back. Blocking calls
// (MPI_Send/MPI_Recv, as osu_latency), each rank polling on its core. One-way us.
std::vector<double> bounce(Runtime& rt, bool initiator, std::span<const std::byte> send,
                           std::span<std::byte> recv, int warmup, int iters, int tag) {
  const int peer = initiator ? 1 : 0;
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(iters));
  for (int i = 0; i < warmup + iters; ++i) {
    if (initiator) {
      const auto t0 = Clock::now();
      rt.send(send, peer, tag);
      rt.recv(recv, peer, tag);
      const auto t1 = Clock::now();
      if (i >= warmup) us.push_back(elapsed_us(t0, t1) / 2);
    } else {
      rt.recv(recv, peer, tag);
      rt.send(send, peer, tag);
    }
  }
  return us;
}

Record pingpong_record(Bytes n) {
  Record r;
  r.kase = "pingpong";
  r.method = "mpi";
  r.src = 0;
  r.dst = 1;
  r.bytes = n;
  r.set(latency_field::sample, std::string("one-way us: one round trip / 2 (as osu_latency)"));
  return r;
}

std::vector<Record> pingpongs(Runtime& rt, const LatencyConfig& cfg) {
  std::vector<Record> out;
  if (rt.size() < 2) {
    for (Bytes n : cfg.sizes) {
      Record r = pingpong_record(n);
      r.status = Status::waived;
      r.reason = "needs 2 ranks (mpiexec -n 2, or --ranks 2)";
      out.push_back(std::move(r));
      if (rt.root()) record_done(out.back());
    }
    return out;
  }
  const Bytes biggest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
  const bool in = rt.rank() <= 1, initiator = rt.rank() == 0;
  std::vector<std::byte> send(in ? biggest : 0), recv(in ? biggest : 0);
  if (in) fill_pattern(send, pattern_seed(rt.rank()));
  for (std::size_t k = 0; k < cfg.sizes.size(); ++k) {
    stop_point(&rt);
    const Bytes n = cfg.sizes[k];
    const int iters = cfg.iters.value_or(pingpong_iters(n));
    const int warmup = cfg.warmup.value_or(std::max(1, iters / 10));
    std::vector<double> us;
    bool wrong = false;
    if (in) {
      const auto sent = std::span<const std::byte>(send.data(), n);
      const auto got = std::span<std::byte>(recv.data(), n);
      if (cfg.check) std::memset(got.data(), 0, n);
      us = bounce(rt, initiator, sent, got, warmup, iters, kTagBase + static_cast<int>(k));
      // What arrived last is the peer's pattern: both legs, checked on each end.
      wrong = cfg.check && find_mismatch(got, pattern_seed(1 - rt.rank())).has_value();
    }
    const bool any_wrong = rt.max(wrong ? 1.0 : 0.0) > 0;  // every rank, in step
    if (!rt.root()) continue;
    Record r = pingpong_record(n);
    r.set_samples(us);
    if (cfg.check) r.verified = !any_wrong;
    if (any_wrong) {
      r.status = Status::failed;
      r.reason = "verification failed: the message received differs from the one sent";
    }
    out.push_back(std::move(r));
    record_done(out.back());
  }
  return out;
}

}  // namespace

int pingpong_iters(Bytes n) { return n <= 8192 ? 10000 : 1000; }

std::string latency_digest(const LatencyConfig& c) {
  std::string s =
      fmt::format("c{} p{} chain{} loads{} i{} w{} check{} sizes", c.chase, c.pingpong, c.chain,
                  c.loads, c.iters.value_or(-1), c.warmup.value_or(-1), c.check);
  for (Bytes n : c.sizes) s += fmt::format(",{}", n);
  return s;
}

void validate_latency(Runtime& rt, const LatencyConfig& cfg) {
  std::string err;
  if (cfg.chase && cfg.chain != 0) {
    if (cfg.chain % kChaseLine != 0 || cfg.chain < 2 * kChaseLine)
      err = fmt::format("--chain {}: a chain is a whole number of {} B lines, at least 2",
                        cfg.chain, kChaseLine);
    else if (cfg.chain / kChaseLine > kChaseMaxLines)
      err = fmt::format("--chain {}: at most {} (2^32 lines)", format_size(cfg.chain),
                        format_size(kChaseMaxLines * kChaseLine));
    else
      err = memory_shortfall(fmt::format("--chain {}", format_size(cfg.chain)), cfg.chain,
                             fmt::format(" on rank {}", rt.rank()));
  }
  if (err.empty() && cfg.pingpong && !cfg.sizes.empty() && rt.rank() <= 1) {
    // Ranks 0 and 1 hold a send and a receive buffer of the largest size.
    const Bytes biggest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
    const Bytes need = biggest > ~Bytes{0} / 2 ? ~Bytes{0} : 2 * biggest;
    err = memory_shortfall(fmt::format("a {} ping-pong", format_size(biggest)), need,
                           fmt::format(" on rank {}", rt.rank()));
  }
  const auto digests = rt.allgather(latency_digest(cfg));
  for (int r = 1; err.empty() && r < rt.size(); ++r)
    if (digests[static_cast<std::size_t>(r)] != digests[0])
      err = fmt::format(
          "ranks were started with different options: rank 0 has '{}', rank {} has '{}'",
          digests[0], r, digests[static_cast<std::size_t>(r)]);
  err = rt.agree(err);
  if (!err.empty()) throw UsageError(err);
}

std::vector<Record> run_latency(Runtime& rt, Backend& backend, const LatencyConfig& cfg) {
  std::vector<Record> mine;
  if (cfg.chase)
    for (auto& r : chases(rt, backend, cfg)) mine.push_back(std::move(r));
  if (cfg.pingpong)
    for (auto& r : pingpongs(rt, cfg)) mine.push_back(std::move(r));
  // Rank 0 measured; every rank reports its records (and exits alike).
  return records_from_wire(rt.broadcast_text(rt.root() ? records_to_wire(mine) : std::string(), 0));
}

}  // namespace xb
