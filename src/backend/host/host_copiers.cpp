// The host backend's streams, events and the two copy methods.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "backend/host/host_internal.hpp"
#include "core/error.hpp"

namespace xb::host {

Piece piece_of(Bytes n, int i, int parts) {
  const auto p = static_cast<Bytes>(parts);
  Bytes chunk = (n + p - 1) / p;
  chunk = (chunk + 63) / 64 * 64;
  const Bytes begin = std::min(n, chunk * static_cast<Bytes>(i));
  const Bytes end = std::min(n, begin + chunk);
  return {begin, end - begin};
}

int executing_device(const CopyOp& op) {
  if (op.src->device() >= 0) return op.src->device();
  return std::max(op.dst->device(), 0);
}

// ---- events -----------------------------------------------------------------

std::shared_ptr<EventState> HostEvent::arm() {
  state_ = std::make_shared<EventState>();
  return state_;
}

void HostEvent::synchronize() {
  state_->done.wait(0, std::memory_order_acquire);
  if (!state_->error.empty()) throw RuntimeError("copy failed: " + state_->error);
}

bool HostEvent::query() { return state_->done.load(std::memory_order_acquire) != 0; }

double HostEvent::elapsed_us_since(const Event& start) const {
  const auto* s = dynamic_cast<const HostEvent*>(&start);
  if (!s) throw RuntimeError("events of different backends");
  return elapsed_us(s->when(), when());
}

namespace {

// Called by the last worker through a job: stamps the time, then publishes.
WorkerPool::Done signal(std::shared_ptr<EventState> st) {
  return [st = std::move(st)](const std::string& error) {
    st->when = Clock::now();
    st->error = error;
    st->done.store(1, std::memory_order_release);
    st->done.notify_all();
  };
}

}  // namespace

// ---- streams ----------------------------------------------------------------

void HostStream::copy_async(const Buffer& src, Bytes src_off, Buffer& dst, Bytes dst_off, Bytes n) {
  if (src_off > src.size() || n > src.size() - src_off || dst_off > dst.size() ||
      n > dst.size() - dst_off)
    throw RuntimeError("copy range outside its buffers");
  const auto* s = static_cast<const std::byte*>(src.data()) + src_off;
  auto* d = static_cast<std::byte*>(dst.data()) + dst_off;
  engine_.submit([s, d, n](int w, int nw) {
    const Piece p = piece_of(n, w, nw);
    if (p.length) std::memcpy(d + p.offset, s + p.offset, p.length);
  });
}

void HostStream::record(Event& event) {
  auto* e = dynamic_cast<HostEvent*>(&event);
  if (!e) throw RuntimeError("event of another backend recorded on a host stream");
  // Every worker passes this empty job only after its earlier parts.
  engine_.submit({}, signal(e->arm()));
}

void HostStream::synchronize() {
  HostEvent e;
  record(e);
  e.synchronize();
}

void HostStream::wait_gate(std::shared_ptr<Gate> gate) {
  engine_.submit([gate](int, int) { gate->arrive_and_wait(); });
}

namespace {

// Validated before anything is queued: a gate must never be left closed.
void check_ops(std::span<const CopyOp> ops) {
  for (const auto& op : ops)
    if (!op.src || !op.dst || op.bytes > op.src->size() || op.bytes > op.dst->size())
      throw RuntimeError("copy larger than its buffers");
}

CopyTiming timing_from(Clock::time_point t0, const std::vector<Clock::time_point>& ends) {
  CopyTiming t;
  for (const auto& e : ends) {
    t.op_us.push_back(elapsed_us(t0, e));
    t.batch_us = std::max(t.batch_us, t.op_us.back());
  }
  return t;
}

// dma: every op goes to the copy engine of its executing device through a
// stream; the issuer only submits and waits on events.
class DmaCopier final : public Copier {
 public:
  DmaCopier(HostBackend& b, CopierOptions o) : backend_(b), opts_(o) {}
  Method method() const override { return Method::dma; }

  CopyTiming run(std::span<const CopyOp> ops) override {
    check_ops(ops);
    std::map<int, std::unique_ptr<Stream>> streams;
    for (const auto& op : ops) {
      const int dev = executing_device(op);
      if (!streams.count(dev)) streams[dev] = backend_.create_stream(dev, opts_);
    }
    int workers = 0;
    for (auto& [dev, s] : streams) workers += static_cast<HostStream&>(*s).workers();
    auto gate = std::make_shared<Gate>(workers + 1);
    for (auto& [dev, s] : streams) static_cast<HostStream&>(*s).wait_gate(gate);
    std::vector<HostEvent> events(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto& s = *streams[executing_device(ops[i])];
      s.copy_async(*ops[i].src, 0, *ops[i].dst, 0, ops[i].bytes);
      s.record(events[i]);
    }
    gate->arrive();
    std::vector<Clock::time_point> ends;
    for (auto& e : events) {
      e.synchronize();
      ends.push_back(e.when());
    }
    return timing_from(gate->start(), ends);
  }

 private:
  HostBackend& backend_;
  CopierOptions opts_;
};

// core: the issuing cores move the data themselves, synchronously, staging
// every tile through a small per-core buffer (seed 000's UB path).
class CoreCopier final : public Copier {
 public:
  CoreCopier(HostBackend& b, CopierOptions o) : backend_(b), opts_(o) {}
  Method method() const override { return Method::core; }

  CopyTiming run(std::span<const CopyOp> ops) override {
    check_ops(ops);
    std::set<int> devs;
    for (const auto& op : ops) devs.insert(executing_device(op));
    for (int d : devs) prepare(d);
    int workers = 0;
    for (int d : devs) workers += pools_[d]->size();
    auto gate = std::make_shared<Gate>(workers + 1);
    for (int d : devs) pools_[d]->submit([gate](int, int) { gate->arrive_and_wait(); });
    std::vector<std::shared_ptr<EventState>> done;
    for (const auto& op : ops) {
      const int d = executing_device(op);
      done.push_back(std::make_shared<EventState>());
      pools_[d]->submit(staged_part(op, tiles_[d].get()), signal(done.back()));
    }
    gate->arrive();
    std::vector<Clock::time_point> ends;
    for (auto& st : done) {
      st->done.wait(0, std::memory_order_acquire);
      if (!st->error.empty()) throw RuntimeError("copy failed: " + st->error);
      ends.push_back(st->when);
    }
    return timing_from(gate->start(), ends);
  }

 private:
  void prepare(int dev) {
    if (pools_.count(dev)) return;
    pools_[dev] = std::make_unique<WorkerPool>(opts_.threads, backend_.device_cpus(dev));
    tiles_[dev] = backend_.allocate(MemKind::pageable, -1, opts_.tile * static_cast<Bytes>(opts_.threads));
    std::memset(tiles_[dev]->data(), 0, tiles_[dev]->size());
  }

  WorkerPool::Part staged_part(const CopyOp& op, Buffer* tiles) const {
    const auto* s = static_cast<const std::byte*>(op.src->data());
    auto* d = static_cast<std::byte*>(op.dst->data());
    const Bytes n = op.bytes;
    const Bytes tile = opts_.tile;
    auto* base = static_cast<std::byte*>(tiles->data());
    return [s, d, n, tile, base](int w, int nw) {
      const Piece p = piece_of(n, w, nw);
      std::byte* buf = base + tile * static_cast<Bytes>(w);
      for (Bytes off = 0; off < p.length; off += tile) {
        const Bytes len = std::min(tile, p.length - off);
        std::memcpy(buf, s + p.offset + off, len);  // load into the staging tile
        std::memcpy(d + p.offset + off, buf, len);  // store from it
      }
    };
  }

  HostBackend& backend_;
  CopierOptions opts_;
  std::map<int, std::unique_ptr<WorkerPool>> pools_;
  std::map<int, std::unique_ptr<Buffer>> tiles_;
};

}  // namespace

std::unique_ptr<Copier> make_dma_copier(HostBackend& backend, const CopierOptions& opts) {
  return std::make_unique<DmaCopier>(backend, opts);
}

std::unique_ptr<Copier> make_core_copier(HostBackend& backend, const CopierOptions& opts) {
  return std::make_unique<CoreCopier>(backend, opts);
}

}  // namespace xb::host
