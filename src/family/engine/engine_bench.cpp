#include "family/engine/engine_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <future>

#include "core/error.hpp"
#include "core/journal.hpp"
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

// A request: [offset, offset + length) of the local memory <-> the same
// offsets of the server's slot.
struct Req {
  Bytes offset, length;
};

// The client's memory and how requests reach the server from it.
class Local {
 public:
  virtual ~Local() = default;
  virtual void transfer(Op op, const Req& r) = 0;
  virtual void post(Op op, const std::vector<Req>& batch) = 0;
  virtual void wait() = 0;
  // Outside timing: fill with the client's pattern, poison, read back.
  virtual void fill(Bytes total) = 0;
  virtual void poison(Bytes total) = 0;
  virtual std::vector<std::byte> contents(Bytes total) = 0;
  virtual std::string transports() const = 0;
};

// Client memory in a backend buffer: filled, poisoned and read back
// through the backend (device memory need not be host-addressable).
class OnBuffer : public Local {
 public:
  void fill(Bytes total) override {
    std::vector<std::byte> v(total);
    fill_pattern(std::span(v), engine::kClientSeed, 0);
    be_.write(memory(), 0, v);
  }
  void poison(Bytes total) override {
    be_.write(memory(), 0, std::vector<std::byte>(total, std::byte{0x5A}));
  }
  std::vector<std::byte> contents(Bytes total) override {
    std::vector<std::byte> v(total);
    be_.read(memory(), 0, v);
    return v;
  }

 protected:
  explicit OnBuffer(Backend& be) : be_(be) {}
  virtual Buffer& memory() = 0;
  Backend& be_;
};

// Memory UCX registers: the transfers go straight from it.
class Direct final : public Local {
 public:
  // `buf` null: UCX allocates host memory (shareable: shared-memory
  // transports reach it directly); else the backend's buffer, registered.
  Direct(engine::Worker& w, std::unique_ptr<Buffer> buf, Backend& be, Bytes total,
         const engine::SegmentDescriptor& seg, const EngineClientConfig& cfg)
      : be_(be),
        buf_(std::move(buf)),
        region_(buf_ ? engine::Region(w, buf_->data(), total) : engine::Region(w, total)),
        remote_(w, seg, cfg.timeout_s, cfg.peer_errors) {}
  void transfer(Op op, const Req& r) override {
    remote_.transfer(op, {region_.data() + r.offset, r.offset, r.length});
  }
  void post(Op op, const std::vector<Req>& batch) override {
    xfers_.clear();
    for (const Req& r : batch) xfers_.push_back({region_.data() + r.offset, r.offset, r.length});
    remote_.post(op, xfers_);
  }
  void wait() override { remote_.wait(); }
  void fill(Bytes total) override {
    std::vector<std::byte> v(total);
    fill_pattern(std::span(v), engine::kClientSeed, 0);
    put(v);
  }
  void poison(Bytes total) override { put(std::vector<std::byte>(total, std::byte{0x5A})); }
  std::vector<std::byte> contents(Bytes total) override {
    std::vector<std::byte> v(total);
    if (buf_)
      be_.read(*buf_, 0, v);
    else
      std::memcpy(v.data(), region_.data(), total);
    return v;
  }
  std::string transports() const override { return remote_.transports(); }

 private:
  void put(const std::vector<std::byte>& v) {
    if (buf_)
      be_.write(*buf_, 0, v);
    else
      std::memcpy(region_.data(), v.data(), v.size());
  }
  Backend& be_;
  std::unique_ptr<Buffer> buf_;
  engine::Region region_;
  engine::Remote remote_;
  std::vector<engine::Xfer> xfers_;
};

// Device memory UCX cannot register (or --lane staged): two pinned bounce
// buffers, registered, and the backend's copy stream between them and the
// device. Writes: copy chunk i+1 to a bounce buffer while chunk i goes out;
// reads: copy chunk i to the device while chunk i+1 comes in.
class Staged final : public OnBuffer {
 public:
  Staged(engine::Worker& w, Backend& be, int device, Bytes total,
         const engine::SegmentDescriptor& seg, const EngineClientConfig& cfg)
      : OnBuffer(be),
        chunk_(std::min(cfg.stage_chunk, total)),
        dev_(be.allocate(MemKind::device, device, total)),
        stream_(be.create_stream(device, {})),
        done_(be.create_event()),
        remote_(w, seg, cfg.timeout_s, cfg.peer_errors) {
    for (auto& b : bounce_) {
      b.buf = be.allocate(MemKind::pinned, device, chunk_);
      b.region = std::make_unique<engine::Region>(w, b.buf->data(), chunk_);
    }
  }
  void transfer(Op op, const Req& r) override { op == Op::write ? out(r) : in(r); }
  // A batch goes request by request through the pipeline.
  void post(Op op, const std::vector<Req>& batch) override {
    for (const Req& r : batch) transfer(op, r);
  }
  void wait() override {}
  std::string transports() const override { return remote_.transports() + " (staged)"; }

 private:
  Buffer& memory() override { return *dev_; }
  struct Bounce {
    std::unique_ptr<Buffer> buf;
    std::unique_ptr<engine::Region> region;
  };
  void copy(const Buffer& src, Bytes so, Buffer& dst, Bytes dof, Bytes n) {
    stream_->copy_async(src, so, dst, dof, n);
    stream_->record(*done_);
  }
  engine::Xfer xfer(std::size_t i, const Req& r, const std::pair<Bytes, Bytes>& c) {
    return {bounce_[i % 2].region->data(), r.offset + c.first, c.second};
  }
  // device -> bounce -> server.
  void out(const Req& r) {
    const auto chunks = stage_chunks(r.length, chunk_);
    copy(*dev_, r.offset, *bounce_[0].buf, 0, chunks[0].second);
    done_->synchronize();
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      remote_.post(Op::write, {xfer(i, r, chunks[i])});
      if (i + 1 < chunks.size())
        copy(*dev_, r.offset + chunks[i + 1].first, *bounce_[(i + 1) % 2].buf, 0,
             chunks[i + 1].second);
      remote_.wait();
      if (i + 1 < chunks.size()) done_->synchronize();
    }
  }
  // server -> bounce -> device.
  void in(const Req& r) {
    const auto chunks = stage_chunks(r.length, chunk_);
    remote_.post(Op::read, {xfer(0, r, chunks[0])});
    remote_.wait();
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      copy(*bounce_[i % 2].buf, 0, *dev_, r.offset + chunks[i].first, chunks[i].second);
      if (i + 1 < chunks.size()) {
        remote_.post(Op::read, {xfer(i + 1, r, chunks[i + 1])});
        remote_.wait();
      }
      done_->synchronize();
    }
  }

  Bytes chunk_;
  std::unique_ptr<Buffer> dev_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<Event> done_;
  engine::Remote remote_;
  Bounce bounce_[2];
};

// The server's region mapped through its IPC handle: the backend's copy
// engine moves each request between it and the client's memory, an event
// per request (sync) or per batch (async).
class Ipc final : public OnBuffer {
 public:
  Ipc(Backend& be, int device, bool client_device, Bytes total, const engine::SegmentDescriptor& seg)
      : OnBuffer(be),
        offset_(seg.ipc_offset),
        remote_(map(be, device, seg)),
        local_(be.allocate(client_device ? MemKind::device : MemKind::pinned, device, total)),
        stream_(be.create_stream(device, {})),
        done_(be.create_event()) {}
  void transfer(Op op, const Req& r) override {
    enqueue(op, r);
    wait();
  }
  void post(Op op, const std::vector<Req>& batch) override {
    for (const Req& r : batch) enqueue(op, r);
  }
  void wait() override {
    stream_->record(*done_);
    done_->synchronize();
  }
  std::string transports() const override { return be_.name() + " ipc (copy engine)"; }

 private:
  Buffer& memory() override { return *local_; }
  // The server's region, imported through its handle (when the server is
  // this process, the selftest, the backend maps its own export: a process
  // cannot open its own CUDA IPC handles).
  static std::unique_ptr<Buffer> map(Backend& be, int device, const engine::SegmentDescriptor& seg) {
    return be.import_buffer(seg.ipc, device, seg.ipc_size);
  }
  void enqueue(Op op, const Req& r) {
    if (op == Op::read)
      stream_->copy_async(*remote_, offset_ + r.offset, *local_, r.offset, r.length);
    else
      stream_->copy_async(*local_, r.offset, *remote_, offset_ + r.offset, r.length);
  }
  Bytes offset_;
  std::unique_ptr<Buffer> remote_, local_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<Event> done_;
};

// One loop: the whole -t moved in blocks of `bs`.
void one_loop(Local& local, Op op, Bytes total, Bytes bs, const EngineClientConfig& cfg, Timing* t) {
  const Bytes n = total / bs;
  if (!cfg.async) {
    for (Bytes i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      local.transfer(op, {i * bs, bs});
      if (t) t->req_us.push_back(elapsed_us(t0, Clock::now()));
    }
    return;
  }
  std::vector<Req> batch;
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

Record make_record(Op op, const EngineClientConfig& cfg, EngineLane lane, Bytes bs,
                   const Timing& t, std::optional<std::int64_t> bad) {
  Record r;
  r.kase = op == Op::read ? "read" : "write";
  r.method = cfg.async ? "async" : "sync";
  r.bytes = cfg.total;
  r.set_samples(t.loop_us);
  const Stats lat = compute_stats(t.req_us);
  const double batches = std::max<double>(1.0, static_cast<double>(t.req_us.size()));
  r.set(engine_field::mode, to_string(cfg.mode));
  r.set(engine_field::lane, to_string(lane));
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
  if (cfg.window > 0) {
    r.set(engine_field::window, static_cast<std::int64_t>(cfg.window));
    r.set(engine_field::msg_rate,
          messages_per_second(static_cast<double>(cfg.total / bs), r.time_us.median));
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
std::optional<std::int64_t> check(engine::ServerLink& link, Local& local, Op op,
                                  const EngineClientConfig& cfg) {
  if (!cfg.check) return std::nullopt;
  if (op == Op::write) return link.verify(0, cfg.total, engine::kClientSeed);
  const std::vector<std::byte> got = local.contents(cfg.total);
  const auto bad = find_mismatch(std::span<const std::byte>(got), engine::kServerSeed,
                                 link.segment().pattern_offset);
  return bad ? static_cast<std::int64_t>(*bad) : -1;
}

void prepare_local(Op op, Local& local, Bytes total) {
  if (op == Op::write)
    local.fill(total);
  else
    local.poison(total);  // a read that moves nothing is caught
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

EngineRun run_engine_client(engine::ServerLink& link, const EngineClientConfig& cfg,
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
  if (cfg.total > link.segment().length)
    throw UsageError(fmt::format("-t {} is larger than this client's slot on the server ({})",
                                 format_size(cfg.total), format_size(link.segment().length)));
  LaneFacts facts;
  facts.client_device = dev;
  facts.device_registrable = dev && device_memory_registrable(backend);
  facts.server_rkey = !link.segment().rkey.empty();
  facts.server_ipc = !link.segment().ipc.empty();
  facts.same_node = engine::on_this_node(link.segment().node);
  facts.can_import = backend.capabilities().device_ipc;
  facts.backend = backend.name();
  const EngineLane lane = choose_lane(cfg.lane, facts);
  engine::Worker worker;
  const auto r0 = Clock::now();
  std::unique_ptr<Local> local;
  if (lane == EngineLane::ipc)
    local = std::make_unique<Ipc>(backend, cfg.device, dev, cfg.total, link.segment());
  else if (lane == EngineLane::staged)
    local = std::make_unique<Staged>(worker, backend, cfg.device, cfg.total, link.segment(), cfg);
  else
    local = std::make_unique<Direct>(
        worker, dev ? backend.allocate(MemKind::device, cfg.device, cfg.total) : nullptr, backend,
        cfg.total, link.segment(), cfg);
  const double register_ms = elapsed_us(r0, Clock::now()) / 1e3;
  for (Op op : cfg.ops) {
    for (Bytes bs : blocks) {
      stop_point();
      prepare_local(op, *local, cfg.total);
      for (int w = 0; w < cfg.warmup; ++w) one_loop(*local, op, cfg.total, bs, cfg, nullptr);
      Timing t;
      for (int l = 0; l < cfg.loops; ++l) {
        const auto t0 = Clock::now();
        one_loop(*local, op, cfg.total, bs, cfg, &t);
        t.loop_us.push_back(elapsed_us(t0, Clock::now()));
      }
      run.records.push_back(make_record(op, cfg, lane, bs, t, check(link, *local, op, cfg)));
      record_done(run.records.back());
    }
  }
  run.summary = {{"ucx_version", engine::ucx_version()},
                 {"transports", local->transports()},
                 {"lane", std::string(to_string(lane))},
                 {"err_mode", std::string(cfg.peer_errors ? "peer" : "none")},
                 {"connect_ms", connect_ms},
                 {"register_ms", register_ms}};
  return run;
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
