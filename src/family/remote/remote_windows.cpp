#include "family/remote/remote_windows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/cycles.hpp"
#include "core/error.hpp"
#include "core/pattern.hpp"
#include "core/timer.hpp"
#include "family/agree.hpp"

namespace xb {
namespace {

// The largest size, times the slots of a --window.
Bytes biggest_size(const RemoteConfig& cfg) {
  return *std::max_element(cfg.sizes.begin(), cfg.sizes.end()) * remote_slots(cfg);
}

// ---- host windows ----

Transport transport_of(const Runtime& rt, const RemoteConfig& cfg) {
  return cfg.transport ? *cfg.transport : (rt.single_host() ? Transport::shm : Transport::rma);
}

// The root's side of one (op, method): everything a transfer touches. One
// call moves `slots` messages of n bytes, message i at offset i * n of both
// sides: core copies them in a row; dma issues them all, then completes
// them together (one synchronize, or one wait with one flush).
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
  Bytes slots = 1;   // --window, or 1
  std::vector<std::unique_ptr<Window::Request>> reqs{};

  void core(Bytes n) {
    std::byte* remote = win.direct(peer);
    for (Bytes s = 0; s < slots; ++s) core_at(remote, s * n, n);
  }

  // One message: [at, at + n) through the staging tile (`remote`: the
  // peer's window by load/store, or null: MPI get/put).
  void core_at(std::byte* remote, Bytes at, Bytes n) {
    for (Bytes off = at; off < at + n; off += tile) {
      const Bytes len = std::min(tile, at + n - off);
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
      for (Bytes s = 0, at = 0; s < slots; ++s, at += n) {
        if (op == RemoteOp::get)
          stream->copy_async(*peer_buf, at, *local_buf, at, n);
        else
          stream->copy_async(*local_buf, at, *peer_buf, at, n);
      }
      stream->record(*done);
      done->synchronize();
    } else if (slots == 1) {
      if (op == RemoteOp::get)
        win.rget(local, peer, 0, n)->wait();
      else
        win.rput(local, peer, 0, n)->wait();
    } else {
      for (Bytes s = 0, at = 0; s < slots; ++s, at += n)
        reqs.push_back(op == RemoteOp::get ? win.rget(local + at, peer, at, n)
                                           : win.rput(local + at, peer, at, n));
      win.wait_all(reqs);
      reqs.clear();
    }
  }

  void operator()(Bytes n) { method == Method::core ? core(n) : dma(n); }
};

RemoteTimed time_transfers(Mover& move, Bytes n, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) move(n);
  RemoteTimed t;
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

class HostWindows final : public RemoteWindows {
 public:
  // Every rank's window starts with its own pattern; the root also maps
  // its peer's window and opens a copy stream when they share memory (shm).
  HostWindows(Runtime& rt, Backend& backend, const RemoteConfig& cfg)
      : rt_(rt), cfg_(cfg), peer_(remote_peer(rt, cfg)), tr_(transport_of(rt, cfg)) {
    const Bytes biggest = biggest_size(cfg);
    win_ = rt.allocate_window(biggest, tr_);
    fill_pattern(std::span(win_->local(), biggest), remote_window_seed(rt.rank()));
    // A failure on one rank must not leave the others in a collective.
    agree_or_throw(rt, [&] {
      local_ = backend.allocate(MemKind::pageable, -1, biggest);
      stage_ = backend.allocate(MemKind::pageable, -1, cfg.copier.tile);
      done_ = backend.create_event();
      if (tr_ == Transport::shm && is_root()) {
        peer_view_ = std::make_unique<Buffer>(MemKind::pageable, -1, biggest, win_->direct(peer_));
        stream_ = backend.create_stream(0, cfg.copier);
      }
    });
    settle();
  }

  void prepare(RemoteOp op, Bytes n) override {
    if (rt_.rank() == peer_) fill_pattern(std::span(win_->local(), n), remote_window_seed(peer_));
    if (op == RemoteOp::get && is_root()) std::memset(local(), 0x5A, n);  // poison
    if (op == RemoteOp::put && is_root())
      fill_pattern(std::span(local(), n), remote_source_seed(rt_.rank()));
  }

  // The peer of an rma window keeps polling while the root reads or writes
  // it (MPI's progress may serve those transfers); the other ranks sleep.
  void settle() override {
    win_->sync();
    rt_.barrier(tr_ == Transport::rma && rt_.rank() == peer_ ? Runtime::Wait::spin
                                                             : Runtime::Wait::idle);
    win_->sync();
  }

  RemoteTimed time(RemoteOp op, Method m, Bytes n, int warmup, int iters) override {
    Mover move{*win_,
               peer_,
               op,
               m,
               cfg_.copier.tile,
               local(),
               static_cast<std::byte*>(stage_->data()),
               stream_.get(),
               done_.get(),
               local_.get(),
               peer_view_.get(),
               remote_slots(cfg_)};
    return time_transfers(move, n, warmup, iters);
  }

  std::span<std::byte> received(RemoteOp op, Bytes n) override {
    return op == RemoteOp::get ? std::span(local(), n) : std::span(win_->local(), n);
  }

  void finish() override { settle(); }

  std::string transport() const override { return to_string(tr_); }

  Params summary() const override {
    return {{"transport", std::string(to_string(tr_))},
            {"cycle_counter", std::string(cycle_counter_name())},
            {"cycle_hz", cycle_counter_hz()}};
  }

 private:
  bool is_root() const { return rt_.rank() == cfg_.root; }
  std::byte* local() const { return static_cast<std::byte*>(local_->data()); }

  Runtime& rt_;
  const RemoteConfig& cfg_;
  int peer_;
  Transport tr_;
  // Declared in the order they are made: destroyed in reverse, window last.
  std::unique_ptr<Window> win_;
  std::unique_ptr<Buffer> local_, stage_, peer_view_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<Event> done_;
};

// ---- device windows ----

void write_pattern(Backend& b, Buffer& buf, Bytes n, std::uint64_t seed,
                   std::vector<std::byte>& host) {
  fill_pattern(std::span(host.data(), n), seed);
  b.write(buf, 0, std::span<const std::byte>(host.data(), n));
}

class DeviceWindows final : public RemoteWindows {
 public:
  // Every rank exports its window; the root imports its peer's, allocates
  // its local buffer and makes one copier per method.
  DeviceWindows(Runtime& rt, Backend& backend, const RemoteConfig& cfg)
      : rt_(rt),
        backend_(backend),
        cfg_(cfg),
        peer_(remote_peer(rt, cfg)),
        dev_(rt.local_rank() % static_cast<int>(backend.devices().size())),
        host_(biggest_size(cfg)) {
    const Bytes biggest = biggest_size(cfg);
    std::string handle;
    agree_or_throw(rt, [&] {
      win_ = backend.allocate(MemKind::device, dev_, biggest);
      handle = backend.export_buffer(*win_);
    });
    const auto handles = rt.allgather(handle);
    agree_or_throw(rt, [&] {
      if (!is_root()) return;
      local_ = backend.allocate(MemKind::device, dev_, biggest);
      peer_view_ = backend.import_buffer(handles[static_cast<std::size_t>(peer_)], dev_, biggest);
      for (Method m : cfg.methods) copiers_[static_cast<int>(m)] = backend.copier(m, cfg.copier);
    });
    hz_ = backend.devices()[static_cast<std::size_t>(dev_)].clock_hz;
  }

  void prepare(RemoteOp op, Bytes n) override {
    if (rt_.rank() == peer_) write_pattern(backend_, *win_, n, remote_window_seed(peer_), host_);
    if (is_root() && op == RemoteOp::get) {
      std::fill_n(host_.begin(), n, std::byte{0x5A});  // poison
      backend_.write(*local_, 0, std::span<const std::byte>(host_.data(), n));
    }
    if (is_root() && op == RemoteOp::put)
      write_pattern(backend_, *local_, n, remote_source_seed(rt_.rank()), host_);
  }

  void settle() override { rt_.barrier(); }

  // Timed by device events; cycles are that time at the GPU's clock.
  RemoteTimed time(RemoteOp op, Method m, Bytes n, int warmup, int iters) override {
    const CopyOp move = op == RemoteOp::get ? CopyOp{peer_view_.get(), local_.get(), n}
                                            : CopyOp{local_.get(), peer_view_.get(), n};
    Copier& copier = *copiers_[static_cast<int>(m)];
    for (int i = 0; i < warmup; ++i) copier.run(std::span(&move, 1));
    RemoteTimed t;
    for (int i = 0; i < iters; ++i) t.us.push_back(copier.run(std::span(&move, 1)).batch_us);
    double sum = 0;
    for (double us : t.us) sum += us;
    t.cycles = sum / iters * hz_ / 1e6;
    return t;
  }

  std::span<std::byte> received(RemoteOp op, Bytes n) override {
    const bool receiver = rt_.rank() == (op == RemoteOp::get ? cfg_.root : peer_);
    if (receiver && cfg_.check)
      backend_.read(op == RemoteOp::get ? *local_ : *win_, 0, std::span(host_.data(), n));
    return std::span(host_.data(), n);
  }

  void finish() override {
    peer_view_.reset();  // unmap before the peer frees its window
    rt_.barrier();
  }

  std::string transport() const override { return "ipc"; }

  Params summary() const override {
    return {{"transport", std::string("ipc")},
            {"cycle_counter", fmt::format("{} device clock (event time x clock)", backend_.name())},
            {"cycle_hz", hz_}};
  }

 private:
  bool is_root() const { return rt_.rank() == cfg_.root; }

  Runtime& rt_;
  Backend& backend_;
  const RemoteConfig& cfg_;
  int peer_, dev_;
  double hz_ = 0;
  std::vector<std::byte> host_;  // staging for fills and checks
  // Declared in the order they are made: destroyed in reverse, window last.
  std::unique_ptr<Buffer> win_, local_, peer_view_;
  std::unique_ptr<Copier> copiers_[2];
};

}  // namespace

Support windows_fit(const Runtime* rt, const Backend& backend, const RemoteConfig& cfg) {
  if (backend.capabilities().device_ipc && cfg.window > 0)
    return Support::no(fmt::format(
        "--window applies to host windows in this version; {} windows (IPC) time one copy per "
        "iteration",
        backend.name()));
  if (!backend.capabilities().device_ipc) {
    if (cfg.copier.tile < 64)
      return Support::no("--tile must be at least 64 bytes on the host backend");
    return Support::yes();
  }
  if (cfg.transport)
    return Support::no(
        fmt::format("--transport applies to host windows; {} windows use IPC", backend.name()));
  if (rt && !rt->single_host())
    return Support::no(
        fmt::format("remote on {} needs all ranks on one host (IPC)", backend.name()));
  return Support::yes();
}

std::unique_ptr<RemoteWindows> make_host_windows(Runtime& rt, Backend& backend,
                                                 const RemoteConfig& cfg) {
  // Same options on every rank: all throw alike.
  if (const Support s = windows_fit(&rt, backend, cfg); !s.ok) throw UsageError(s.reason);
  return std::make_unique<HostWindows>(rt, backend, cfg);
}

std::unique_ptr<RemoteWindows> make_device_windows(Runtime& rt, Backend& backend,
                                                   const RemoteConfig& cfg) {
  if (const Support s = windows_fit(&rt, backend, cfg); !s.ok) throw UsageError(s.reason);
  return std::make_unique<DeviceWindows>(rt, backend, cfg);
}

}  // namespace xb
