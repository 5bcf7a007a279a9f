#include "family/remote/remote_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "core/corruption.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pattern.hpp"
#include "core/sysinfo.hpp"
#include "family/cycles.hpp"
#include "family/host_pages.hpp"
#include "family/remote/remote_windows.hpp"

namespace xb {
namespace {

// Verifies on the receiving rank and shares the result: -1 all bytes
// right, -2 not checked, else the first wrong offset.
std::int64_t verify(Runtime& rt, const RemoteConfig& cfg, RemoteOp op, int peer,
                    std::span<std::byte> got) {
  std::int64_t bad = -2;
  const int receiver = op == RemoteOp::get ? cfg.root : peer;
  if (cfg.check && rt.rank() == receiver) {
    if (cfg.before_verify) cfg.before_verify(got);
    const std::uint64_t seed =
        op == RemoteOp::get ? remote_window_seed(peer) : remote_source_seed(cfg.root);
    const auto m = find_mismatch(got, seed, 0);
    bad = m ? static_cast<std::int64_t>(*m) : -1;
  }
  if (cfg.check) rt.broadcast(std::as_writable_bytes(std::span(&bad, 1)), receiver);
  return bad;
}

// --check every: each timed transfer alone, the windows prepared (poisoned)
// before it and the received bytes checked after it, outside its time; the
// receiver's tally on every rank.
RemoteTimed time_checked(Runtime& rt, const RemoteConfig& cfg, RemoteWindows& w, RemoteOp op,
                         Method m, Bytes n, int peer, CheckTally& tally) {
  const Bytes moved = n * remote_slots(cfg);
  const int receiver = op == RemoteOp::get ? cfg.root : peer;
  const int iters = cfg.iters.value_or(scaled_iters(moved));
  const std::uint64_t seed =
      op == RemoteOp::get ? remote_window_seed(peer) : remote_source_seed(cfg.root);
  const std::string where = fmt::format("rank {} ({}) from rank {}", receiver, host_name(),
                                        op == RemoteOp::get ? peer : cfg.root);
  RemoteTimed t;
  double cycles = 0;
  CheckTally mine;
  // The warm-up (and one transfer more, discarded) before the first prepare:
  // what it moved must not pass the first checked transfer.
  if (rt.rank() == cfg.root)
    (void)w.time(op, m, n, cfg.warmup.value_or(std::max(1, iters / 10)), 1);
  for (int i = 0; i < iters; ++i) {
    w.settle();
    w.prepare(op, moved);
    w.settle();
    if (rt.rank() == cfg.root) {
      const RemoteTimed one = w.time(op, m, n, 0, 1);
      t.us.push_back(one.us.front());
      cycles += one.cycles;
    }
    w.settle();
    if (rt.rank() != receiver) continue;
    const std::span<std::byte> got = w.received(op, moved);
    if (cfg.before_verify) cfg.before_verify(got);
    mine.add(i, pattern_bad(got, seed, 0, i, where));
  }
  t.cycles = cycles / iters;
  tally = allgather_tally(rt, mine);
  return t;
}

Record make_record(const RemoteConfig& cfg, RemoteOp op, Method m, int peer, Bytes n,
                   const RemoteTimed& t, std::int64_t bad, const std::string& transport) {
  Record r;
  r.kase = to_string(op);
  r.method = to_string(m);
  r.src = op == RemoteOp::get ? peer : cfg.root;
  r.dst = op == RemoteOp::get ? cfg.root : peer;
  r.bytes = n * remote_slots(cfg);
  r.set_samples(t.us);
  r.set(remote_field::cycles, t.cycles);
  r.set(remote_field::transport, transport);
  if (cfg.window > 0) {
    r.set(remote_field::window, std::int64_t{cfg.window});
    r.set(remote_field::msg_rate, messages_per_second(cfg.window, r.time_us.median));
  }
  if (bad != -2) r.verified = bad == -1;
  if (bad >= 0) {
    r.status = Status::failed;
    r.reason = fmt::format("verification failed: first wrong byte at offset {}", bad);
  }
  return r;
}

std::vector<Record> waived_all(const RemoteConfig& cfg, const std::string& why) {
  std::vector<Record> out;
  for (RemoteOp op : cfg.ops)
    for (Method m : cfg.methods)
      for (Bytes n : cfg.sizes) {
        out.push_back(
            Record::waived(to_string(op), to_string(m), -1, -1, n * remote_slots(cfg), why));
        if (cfg.window > 0) out.back().set(remote_field::window, std::int64_t{cfg.window});
      }
  return out;
}

// Collective. Every (op, method, size): prepare outside timing, the root
// times the transfers, the receiver verifies (every slot of a window). The
// root's records.
std::vector<Record> sweep(Runtime& rt, const RemoteConfig& cfg, RemoteWindows& w) {
  const int peer = remote_peer(rt, cfg);
  const bool is_root = rt.rank() == cfg.root;
  std::vector<Record> mine;
  for (RemoteOp op : cfg.ops)
    for (Method m : cfg.methods)
      for (Bytes n : cfg.sizes) {
        stop_point(&rt);                            // every rank, in step
        const Bytes moved = n * remote_slots(cfg);  // per iteration
        w.prepare(op, moved);
        w.settle();
        RemoteTimed t;
        CheckTally tally;
        std::int64_t bad = -2;
        if (cfg.check_every) {
          t = time_checked(rt, cfg, w, op, m, n, peer, tally);
        } else {
          if (is_root) {
            const int iters = cfg.iters.value_or(scaled_iters(moved));
            t = w.time(op, m, n, cfg.warmup.value_or(std::max(1, iters / 10)), iters);
          }
          w.settle();
          bad = verify(rt, cfg, op, peer, w.received(op, moved));
        }
        if (is_root) {
          mine.push_back(make_record(cfg, op, m, peer, n, t, bad, w.transport()));
          if (cfg.check_every) set_check_fields(mine.back(), tally);
          if (!cfg.thread_counts.empty())
            mine.back().set(remote_field::threads, std::int64_t{cfg.copier.threads});
          record_done(mine.back());  // the run's output is on rank 0: the default root
        }
      }
  w.finish();
  return mine;
}

// The issuing rank's records, reported by every rank, with the crossover lines.
RemoteResult share(Runtime& rt, const RemoteConfig& cfg, const std::vector<Record>& mine,
                   Params summary) {
  const auto wires = rt.allgather(rt.rank() == cfg.root ? records_to_wire(mine) : std::string());
  RemoteResult res;
  res.records = records_from_wire(wires[static_cast<std::size_t>(cfg.root)]);
  res.summary = std::move(summary);
  for (RemoteOp op : cfg.ops) {
    if (!cfg.thread_counts.empty()) break;  // one crossover per thread count would mislead
    const std::string line = crossover_text(res.records, to_string(op));
    if (!line.empty()) res.summary.emplace_back(std::string("crossover_") + to_string(op), line);
  }
  return res;
}

}  // namespace

const char* to_string(RemoteOp op) { return op == RemoteOp::get ? "get" : "put"; }

int scaled_iters(Bytes n) {
  const Bytes budget = 256ULL << 20;
  return static_cast<int>(std::clamp<Bytes>(budget / std::max<Bytes>(n, 1), 20, 1000));
}

std::string remote_digest(const RemoteConfig& c) {
  std::string s;
  for (auto op : c.ops) s += std::string(to_string(op)) + ",";
  for (auto m : c.methods) s += std::string(to_string(m)) + ",";
  for (auto n : c.sizes) s += std::to_string(n) + ",";
  s += fmt::format("i{} w{} t{} r{} p{} c{} th{} tile{}", c.iters.value_or(-1),
                   c.warmup.value_or(-1), c.transport ? to_string(*c.transport) : "auto", c.root,
                   c.peer.value_or(-1), c.check, c.copier.threads, c.copier.tile);
  for (int t : c.thread_counts) s += fmt::format(",th{}", t);
  if (c.window > 0) s += fmt::format(" win{}", c.window);
  return s;
}

void validate_remote(Runtime& rt, const RemoteConfig& cfg) {
  std::string err;
  const int n = rt.size();
  if (cfg.root < 0 || cfg.root >= n)
    err = fmt::format("--root {} out of range: {} rank{} (0..{})", cfg.root, n, n == 1 ? "" : "s",
                      n - 1);
  else if (n >= 2 && (remote_peer(rt, cfg) < 0 || remote_peer(rt, cfg) >= n))
    err = fmt::format("--peer {} out of range: {} ranks (0..{})", remote_peer(rt, cfg), n, n - 1);
  else if (n >= 2 && remote_peer(rt, cfg) == cfg.root)
    err = fmt::format("--peer must differ from --root ({})", cfg.root);
  else if (cfg.transport == Transport::shm && !rt.single_host())
    err = "--transport shm needs all ranks on one host (use --transport rma)";
  const auto digests = rt.allgather(remote_digest(cfg));
  for (int r = 1; err.empty() && r < n; ++r)
    if (digests[static_cast<std::size_t>(r)] != digests[0])
      err = fmt::format(
          "ranks were started with different options: rank 0 has '{}', rank {} has '{}'",
          digests[0], r, digests[static_cast<std::size_t>(r)]);
  if (err.empty() && !cfg.sizes.empty()) {
    // Every slot of a --window, on both sides.
    const Bytes slots = remote_slots(cfg);
    const Bytes largest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
    const Bytes cap = std::numeric_limits<Bytes>::max() / 4;
    const Bytes biggest = largest > cap / slots ? cap : largest * slots;
    const Bytes need = 3 * biggest + cfg.copier.tile;  // window, local buffer, peer view
    err = memory_shortfall(
        fmt::format("a {} window{}", format_size(largest),
                    slots > 1 ? fmt::format(" of {} messages", slots) : std::string()),
        need, fmt::format(" on rank {}", rt.rank()));
  }
  err = rt.agree(err);
  if (!err.empty()) throw UsageError(err);
}

std::string remote_unsupported(const std::string& backend) {
  return fmt::format(
      "remote on the {} backend needs device memory shared between processes, not in this version",
      backend);
}

RemoteResult run_remote(Runtime& rt, Backend& backend, const RemoteConfig& cfg) {
  if (rt.size() < 2)
    return {waived_all(cfg, "needs at least 2 ranks: run under `mpiexec -n 2` or add --ranks 2"),
            {}};
  const bool ipc = backend.capabilities().device_ipc;
  if (!ipc && backend.name() != "host")
    return {waived_all(cfg, remote_unsupported(backend.name())), {}};
  if (const std::string no_huge = rt.agree(use_host_pages(backend, cfg.huge_pages).reason);
      !no_huge.empty())
    return {waived_all(cfg, no_huge), {}};
  const std::vector<int> threads =
      cfg.thread_counts.empty() ? std::vector<int>{cfg.copier.threads} : cfg.thread_counts;
  std::vector<Record> mine;
  Params summary;
  for (int t : threads) {  // windows (and their copiers) made again for each count
    RemoteConfig one = cfg;
    one.copier.threads = t;
    const auto w =
        ipc ? make_device_windows(rt, backend, one) : make_host_windows(rt, backend, one);
    for (auto& r : sweep(rt, one, *w)) mine.push_back(std::move(r));
    summary = w->summary();
  }
  // The root measured; every rank reports the root's records.
  return share(rt, cfg, mine, std::move(summary));
}

Bytes remote_message_size(const Record& r) {
  const std::int64_t w = r.get_or(remote_field::window, std::int64_t{0});
  return w > 0 ? r.bytes / static_cast<Bytes>(w) : r.bytes;
}

std::string crossover_text(const std::vector<Record>& records, const std::string& op) {
  std::map<Bytes, std::pair<double, double>> bw;  // message size -> (core, dma)
  for (const auto& r : records) {
    if (r.kase != op || r.status != Status::ok) continue;
    auto& cell = bw.try_emplace(remote_message_size(r), -1.0, -1.0).first->second;
    (r.method == "core" ? cell.first : cell.second) = r.gbps_median;
  }
  std::vector<std::pair<Bytes, bool>> dma_wins;  // sizes where both ran
  for (const auto& [n, c] : bw)
    if (c.first >= 0 && c.second >= 0) dma_wins.emplace_back(n, c.second > c.first);
  if (dma_wins.empty()) return {};
  std::size_t from = dma_wins.size();
  while (from > 0 && dma_wins[from - 1].second) --from;
  if (from == dma_wins.size()) {
    const auto wins =
        std::count_if(dma_wins.begin(), dma_wins.end(), [](const auto& w) { return w.second; });
    if (wins == 0)
      return fmt::format("{}: core is faster at every size up to {}", op,
                         format_size(dma_wins.back().first));
    return fmt::format(
        "{}: no crossover: dma is faster at {} of {} sizes, core at the largest ({})", op, wins,
        dma_wins.size(), format_size(dma_wins.back().first));
  }
  if (from == 0)
    return fmt::format("{}: dma is faster at every size from {}", op,
                       format_size(dma_wins.front().first));
  return fmt::format("{}: dma overtakes core from {}", op, format_size(dma_wins[from].first));
}

}  // namespace xb
