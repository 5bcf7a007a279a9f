#include "family/remote/remote_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "core/cycles.hpp"
#include "core/error.hpp"
#include "core/pattern.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"

namespace xb {
namespace {

std::uint64_t window_seed(int rank) { return 0xA11CE000ULL + static_cast<std::uint64_t>(rank); }
std::uint64_t source_seed(int rank) { return 0xB0B00000ULL + static_cast<std::uint64_t>(rank); }

int peer_of(const Runtime& rt, const RemoteConfig& cfg) {
  return cfg.peer ? *cfg.peer : (cfg.root + 1) % rt.size();
}

Transport transport_of(const Runtime& rt, const RemoteConfig& cfg) {
  return cfg.transport ? *cfg.transport : (rt.single_host() ? Transport::shm : Transport::rma);
}

// The root's side of one (op, method): everything a transfer touches.
struct Mover {
  Window& win;
  int peer;
  RemoteOp op;
  Method method;
  Bytes tile;
  std::byte* local;  // get: destination, put: source
  std::byte* stage;  // core: the staging tile
  Stream* stream;    // dma over shm: the backend's copy engine
  Event* done;
  Buffer* local_buf;
  Buffer* peer_buf;  // a view of the peer's window

  void core(Bytes n) {
    std::byte* remote = win.direct(peer);
    for (Bytes off = 0; off < n; off += tile) {
      const Bytes len = std::min(tile, n - off);
      if (op == RemoteOp::get) {
        if (remote)
          std::memcpy(stage, remote + off, len);
        else
          win.get(stage, peer, off, len);
        std::memcpy(local + off, stage, len);
      } else {
        std::memcpy(stage, local + off, len);
        if (remote)
          std::memcpy(remote + off, stage, len);
        else
          win.put(stage, peer, off, len);
      }
    }
  }

  void dma(Bytes n) {
    if (stream) {
      if (op == RemoteOp::get)
        stream->copy_async(*peer_buf, 0, *local_buf, 0, n);
      else
        stream->copy_async(*local_buf, 0, *peer_buf, 0, n);
      stream->record(*done);
      done->synchronize();
    } else if (op == RemoteOp::get) {
      win.rget(local, peer, 0, n)->wait();
    } else {
      win.rput(local, peer, 0, n)->wait();
    }
  }

  void operator()(Bytes n) { method == Method::core ? core(n) : dma(n); }
};

struct Timed {
  std::vector<double> us;
  double cycles = 0;  // mean per transfer
};

Timed time_transfers(Mover& move, Bytes n, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) move(n);
  Timed t;
  std::uint64_t total = 0;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    const auto c0 = cycle_counter();
    move(n);
    const auto c1 = cycle_counter();
    t.us.push_back(elapsed_us(t0, Clock::now()));
    total += c1 - c0;
  }
  t.cycles = static_cast<double>(total) / iters;
  return t;
}

void fence(Runtime& rt, Window& win) {
  win.sync();
  rt.barrier();
  win.sync();
}

// Verifies on the receiving rank and shares the result: -1 all bytes
// right, -2 not checked, else the first wrong offset.
std::int64_t verify(Runtime& rt, const RemoteConfig& cfg, RemoteOp op, int peer,
                    std::span<std::byte> got) {
  std::int64_t bad = -2;
  const int receiver = op == RemoteOp::get ? cfg.root : peer;
  if (cfg.check && rt.rank() == receiver) {
    if (cfg.before_verify) cfg.before_verify(got);
    const std::uint64_t seed = op == RemoteOp::get ? window_seed(peer) : source_seed(cfg.root);
    const auto m = find_mismatch(got, seed, 0);
    bad = m ? static_cast<std::int64_t>(*m) : -1;
  }
  if (cfg.check) rt.broadcast(std::as_writable_bytes(std::span(&bad, 1)), receiver);
  return bad;
}

Record make_record(const RemoteConfig& cfg, RemoteOp op, Method m, int peer, Bytes n,
                   const Timed& t, std::int64_t bad, const std::string& transport) {
  Record r;
  r.kase = to_string(op);
  r.method = to_string(m);
  r.src = op == RemoteOp::get ? peer : cfg.root;
  r.dst = op == RemoteOp::get ? cfg.root : peer;
  r.bytes = n;
  r.set_samples(t.us);
  r.set(remote_field::cycles, t.cycles);
  r.set(remote_field::transport, transport);
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
      for (Bytes n : cfg.sizes)
        out.push_back(Record::waived(to_string(op), to_string(m), -1, -1, n, why));
  return out;
}

// The issuing rank's records, reported by every rank, with the crossover lines.
RemoteResult share(Runtime& rt, const RemoteConfig& cfg, std::vector<Record> mine, Params summary) {
  const auto wires = rt.allgather(rt.rank() == cfg.root ? records_to_wire(mine) : std::string());
  RemoteResult res;
  res.records = records_from_wire(wires[static_cast<std::size_t>(cfg.root)]);
  res.summary = std::move(summary);
  for (RemoteOp op : cfg.ops) {
    const std::string line = crossover_text(res.records, to_string(op));
    if (!line.empty()) res.summary.emplace_back(std::string("crossover_") + to_string(op), line);
  }
  return res;
}

void write_pattern(Backend& b, Buffer& buf, Bytes n, std::uint64_t seed,
                   std::vector<std::byte>& host) {
  fill_pattern(std::span(host.data(), n), seed);
  b.write(buf, 0, std::span<const std::byte>(host.data(), n));
}

// Device windows (GPU backends): each rank's window is memory of its GPU
// (host-local rank modulo the GPUs, so several ranks may share one),
// exported through the backend's IPC; the root maps its peer's window and
// moves bytes with the backend's copiers: `core` = SM kernels, `dma` = copy
// engines, timed by device events. Cycles are that time at the GPU's clock.
RemoteResult run_remote_device(Runtime& rt, Backend& backend, const RemoteConfig& cfg) {
  if (cfg.transport)
    throw UsageError(
        fmt::format("--transport applies to host windows; {} windows use IPC", backend.name()));
  if (!rt.single_host())
    throw UsageError(fmt::format("remote on {} needs all ranks on one host (IPC)", backend.name()));
  const int peer = peer_of(rt, cfg);
  const bool is_root = rt.rank() == cfg.root;
  const int dev = rt.local_rank() % static_cast<int>(backend.devices().size());
  const Bytes biggest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
  std::vector<std::byte> host(biggest);
  std::unique_ptr<Buffer> win, local, peer_view;
  std::unique_ptr<Copier> copiers[2];
  std::string err, handle;
  try {
    win = backend.allocate(MemKind::device, dev, biggest);
    handle = backend.export_buffer(*win);
  } catch (const std::exception& e) {
    err = fmt::format("rank {}: {}", rt.rank(), e.what());
  }
  const auto handles = rt.allgather(handle);
  err = rt.agree(err);
  if (!err.empty()) throw RuntimeError(err);
  try {
    if (is_root) {
      local = backend.allocate(MemKind::device, dev, biggest);
      peer_view = backend.import_buffer(handles[static_cast<std::size_t>(peer)], dev, biggest);
      for (Method m : cfg.methods) copiers[static_cast<int>(m)] = backend.copier(m, cfg.copier);
    }
  } catch (const std::exception& e) {
    err = fmt::format("rank {}: {}", rt.rank(), e.what());
  }
  err = rt.agree(err);
  if (!err.empty()) throw RuntimeError(err);
  const double hz = backend.devices()[static_cast<std::size_t>(dev)].clock_hz;

  std::vector<Record> mine;
  for (RemoteOp op : cfg.ops) {
    for (Method m : cfg.methods) {
      for (Bytes n : cfg.sizes) {
        if (rt.rank() == peer) write_pattern(backend, *win, n, window_seed(peer), host);
        if (is_root && op == RemoteOp::get) {
          std::fill_n(host.begin(), n, std::byte{0x5A});  // poison
          backend.write(*local, 0, std::span<const std::byte>(host.data(), n));
        }
        if (is_root && op == RemoteOp::put)
          write_pattern(backend, *local, n, source_seed(rt.rank()), host);
        rt.barrier();
        Timed t;
        if (is_root) {
          const CopyOp move = op == RemoteOp::get ? CopyOp{peer_view.get(), local.get(), n}
                                                  : CopyOp{local.get(), peer_view.get(), n};
          const int iters = cfg.iters.value_or(scaled_iters(n));
          for (int i = 0; i < cfg.warmup.value_or(std::max(1, iters / 10)); ++i)
            copiers[static_cast<int>(m)]->run(std::span(&move, 1));
          for (int i = 0; i < iters; ++i)
            t.us.push_back(copiers[static_cast<int>(m)]->run(std::span(&move, 1)).batch_us);
          double sum = 0;
          for (double us : t.us) sum += us;
          t.cycles = sum / iters * hz / 1e6;
        }
        rt.barrier();
        const bool receiver = rt.rank() == (op == RemoteOp::get ? cfg.root : peer);
        if (receiver && cfg.check)
          backend.read(op == RemoteOp::get ? *local : *win, 0, std::span(host.data(), n));
        const std::int64_t bad = verify(rt, cfg, op, peer, std::span(host.data(), n));
        if (is_root) mine.push_back(make_record(cfg, op, m, peer, n, t, bad, "ipc"));
      }
    }
  }
  peer_view.reset();  // unmap before the peer frees its window
  rt.barrier();
  return share(
      rt, cfg, std::move(mine),
      {{"transport", std::string("ipc")},
       {"cycle_counter", fmt::format("{} device clock (event time x clock)", backend.name())},
       {"cycle_hz", hz}});
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
  return s;
}

void validate_remote(Runtime& rt, const RemoteConfig& cfg) {
  std::string err;
  const int n = rt.size();
  if (cfg.root < 0 || cfg.root >= n)
    err = fmt::format("--root {} out of range: {} rank{} (0..{})", cfg.root, n, n == 1 ? "" : "s",
                      n - 1);
  else if (n >= 2 && (peer_of(rt, cfg) < 0 || peer_of(rt, cfg) >= n))
    err = fmt::format("--peer {} out of range: {} ranks (0..{})", peer_of(rt, cfg), n, n - 1);
  else if (n >= 2 && peer_of(rt, cfg) == cfg.root)
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
    const Bytes biggest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
    const Bytes need = 3 * biggest + cfg.copier.tile;  // window, local buffer, peer view
    const Bytes avail = available_memory();
    if (avail && need > avail)
      err =
          fmt::format("a {} window needs {} on rank {}, only {} is available", format_size(biggest),
                      format_capacity(need), rt.rank(), format_capacity(avail));
  }
  err = rt.agree(err);
  if (!err.empty()) throw UsageError(err);
}

RemoteResult run_remote(Runtime& rt, Backend& backend, const RemoteConfig& cfg) {
  RemoteResult res;
  if (rt.size() < 2) {
    res.records =
        waived_all(cfg, "needs at least 2 ranks: run under `mpiexec -n 2` or add --ranks 2");
    return res;
  }
  if (backend.capabilities().device_ipc) return run_remote_device(rt, backend, cfg);
  if (backend.name() != "host") {
    res.records = waived_all(cfg, fmt::format("remote on the {} backend needs device memory "
                                              "shared between processes, not in this version",
                                              backend.name()));
    return res;
  }
  if (cfg.copier.tile < 64)  // same options on every rank: all throw alike
    throw UsageError("--tile must be at least 64 bytes on the host backend");
  const int peer = peer_of(rt, cfg);
  const Transport tr = transport_of(rt, cfg);
  const Bytes biggest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
  auto win = rt.allocate_window(biggest, tr);
  fill_pattern(std::span(win->local(), biggest), window_seed(rt.rank()));
  const bool is_root = rt.rank() == cfg.root;
  std::unique_ptr<Buffer> local, stage, peer_view;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> done;
  std::string err;
  try {  // a failure on one rank must not leave the others in a collective
    local = backend.allocate(MemKind::pageable, -1, biggest);
    stage = backend.allocate(MemKind::pageable, -1, cfg.copier.tile);
    done = backend.create_event();
    if (tr == Transport::shm && is_root) {
      peer_view = std::make_unique<Buffer>(MemKind::pageable, -1, biggest, win->direct(peer));
      stream = backend.create_stream(0, cfg.copier);
    }
  } catch (const std::exception& e) {
    err = fmt::format("rank {}: {}", rt.rank(), e.what());
  }
  err = rt.agree(err);
  if (!err.empty()) throw RuntimeError(err);
  auto* lp = static_cast<std::byte*>(local->data());  // get: destination, put: source
  fence(rt, *win);

  for (RemoteOp op : cfg.ops) {
    for (Method m : cfg.methods) {
      Mover move{*win,
                 peer,
                 op,
                 m,
                 cfg.copier.tile,
                 lp,
                 static_cast<std::byte*>(stage->data()),
                 stream.get(),
                 done.get(),
                 local.get(),
                 peer_view.get()};
      for (Bytes n : cfg.sizes) {
        // Outside timing: the peer's window holds its own pattern (a put
        // must replace it), the root's buffer is poisoned (get) or the source (put).
        if (rt.rank() == peer) fill_pattern(std::span(win->local(), n), window_seed(peer));
        if (op == RemoteOp::get && is_root) std::memset(lp, 0x5A, n);  // poison
        if (op == RemoteOp::put && is_root) fill_pattern(std::span(lp, n), source_seed(rt.rank()));
        fence(rt, *win);
        const int iters = cfg.iters.value_or(scaled_iters(n));
        Timed t;
        if (is_root)
          t = time_transfers(move, n, cfg.warmup.value_or(std::max(1, iters / 10)), iters);
        fence(rt, *win);
        std::span<std::byte> got =
            op == RemoteOp::get ? std::span(lp, n) : std::span(win->local(), n);
        const std::int64_t bad = verify(rt, cfg, op, peer, got);
        if (is_root) res.records.push_back(make_record(cfg, op, m, peer, n, t, bad, to_string(tr)));
      }
    }
  }
  fence(rt, *win);
  // The issuing rank measured; rank 0 reports.
  return share(rt, cfg, std::move(res.records),
               {{"transport", std::string(to_string(tr))},
                {"cycle_counter", std::string(cycle_counter_name())},
                {"cycle_hz", cycle_counter_hz()}});
}

std::string crossover_text(const std::vector<Record>& records, const std::string& op) {
  std::map<Bytes, std::pair<double, double>> bw;  // size -> (core, dma)
  for (const auto& r : records) {
    if (r.kase != op || r.status != Status::ok) continue;
    auto& cell = bw.try_emplace(r.bytes, -1.0, -1.0).first->second;
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
