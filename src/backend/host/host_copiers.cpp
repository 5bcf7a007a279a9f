// The host backend's streams, events and the two copy methods.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

#include "backend/host/host_internal.hpp"
#include "core/error.hpp"

namespace xb::host {

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

// ---- throttle (test-only) ------------------------------------------------------

std::string copy_direction(const Buffer& src, const Buffer& dst) {
  const bool sd = src.kind() == MemKind::device, dd = dst.kind() == MemKind::device;
  if (sd && dd) return src.device() == dst.device() ? "d2d" : "p2p";
  return sd ? "d2h" : dd ? "h2d" : "h2h";
}

WorkerPool::Part throttled(WorkerPool::Part part, double factor) {
  if (factor >= 1) return part;
  return [part = std::move(part), factor](int w, int nw) {
    const auto t0 = Clock::now();
    part(w, nw);
    std::this_thread::sleep_for((Clock::now() - t0) * (1 / factor - 1));
  };
}

// ---- corruption (test-only) ---------------------------------------------------

WorkerPool::Done corrupted(const Buffer& src, const Buffer& dst, void* d, Bytes n,
                           WorkerPool::Done then) {
  Corrupter* knob = Corrupter::from_env();
  const std::optional<Flip> flip =
      knob ? knob->draw_copy(src.kind() == MemKind::device ? src.device() : -1,
                             dst.kind() == MemKind::device ? dst.device() : -1, n)
           : std::nullopt;
  if (!flip) return then;
  // On the last worker, once every part of the copy is in place.
  return [flip = *flip, d, then = std::move(then)](const std::string& error) {
    flip.apply(d);
    if (then) then(error);
  };
}

// ---- streams ----------------------------------------------------------------

void HostStream::copy_async(const Buffer& src, Bytes src_off, Buffer& dst, Bytes dst_off, Bytes n) {
  check_range(src, src_off, n, "copy");
  check_range(dst, dst_off, n, "copy");
  const auto* s = static_cast<const std::byte*>(src.data()) + src_off;
  auto* d = static_cast<std::byte*>(dst.data()) + dst_off;
  const double f = throttles_ ? throttle_factor(*throttles_, copy_direction(src, dst), src.device(),
                                                dst.device())
                              : 1.0;
  if (f >= 1) {
    engine_.submit_copy(s, d, n, corrupted(src, dst, d, n));
    return;
  }
  engine_.submit(throttled([s, d, n](int w, int nw) { copy_piece(s, d, n, w, nw); }, f),
                 corrupted(src, dst, d, n));
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

namespace {

// Queues a gate on every pool, then each op (queue_op returns its completion
// state), all held back until every op is queued; releasing the pools wakes
// the workers, the last to reach the gate opens it: the common start of both
// copy methods. The issuer then sleeps on the completions.
CopyTiming run_gated(const std::set<WorkerPool*>& pools, std::size_t nops,
                     const std::function<std::shared_ptr<EventState>(std::size_t)>& queue_op) {
  int workers = 0;
  for (auto* p : pools) workers += p->size();
  auto gate = std::make_shared<Gate>(workers);
  std::vector<std::shared_ptr<EventState>> done;
  try {
    for (auto* p : pools) {
      p->hold();
      p->submit([gate](int, int) { gate->arrive_and_wait(); });
    }
    for (std::size_t i = 0; i < nops; ++i) done.push_back(queue_op(i));
  } catch (...) {
    for (auto* p : pools) p->discard();  // no worker ever saw the gate
    throw;
  }
  for (auto* p : pools) p->release();
  CopyTiming t;
  for (auto& st : done) {
    st->done.wait(0, std::memory_order_acquire);
    if (!st->error.empty()) throw RuntimeError("copy failed: " + st->error);
    t.op_us.push_back(elapsed_us(gate->start(), st->when));
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
    std::map<int, HostStream> streams;
    std::set<WorkerPool*> pools;
    for (const auto& op : ops) {
      const int dev = executing_device(op);
      auto& engine = backend_.engine(dev, opts_.threads);
      streams.try_emplace(dev, dev, engine, &backend_.throttles());
      pools.insert(&engine);
    }
    std::vector<HostEvent> events(ops.size());
    return run_gated(pools, ops.size(), [&](std::size_t i) {
      auto& s = streams.at(executing_device(ops[i]));
      s.copy_async(*ops[i].src, 0, *ops[i].dst, 0, ops[i].bytes);
      s.record(events[i]);
      return events[i].state();
    });
  }

 private:
  HostBackend& backend_;
  CopierOptions opts_;
};

// core: the issuing cores move the data themselves, synchronously, staging
// every tile through a small per-core buffer (the UB path of pto-isa's TGET example).
class CoreCopier final : public Copier {
 public:
  CoreCopier(HostBackend& b, CopierOptions o) : backend_(b), opts_(o) {}
  Method method() const override { return Method::core; }

  CopyTiming run(std::span<const CopyOp> ops) override {
    check_ops(ops);
    std::set<WorkerPool*> pools;
    for (const auto& op : ops) pools.insert(&prepare(executing_device(op)));
    return run_gated(pools, ops.size(), [&](std::size_t i) {
      const int d = executing_device(ops[i]);
      auto st = std::make_shared<EventState>();
      pools_[d]->submit(
          throttled(staged_part(ops[i], tiles_[d].get()),
                    backend_.throttle(*ops[i].src, *ops[i].dst)),
          corrupted(*ops[i].src, *ops[i].dst, ops[i].dst->data(), ops[i].bytes, signal(st)));
      return st;
    });
  }

 private:
  WorkerPool& prepare(int dev) {
    if (pools_.count(dev)) return *pools_[dev];
    pools_[dev] = std::make_unique<WorkerPool>(opts_.threads, backend_.device_cpus(dev));
    tiles_[dev] =
        backend_.allocate(MemKind::pageable, -1, opts_.tile * static_cast<Bytes>(opts_.threads));
    std::memset(tiles_[dev]->data(), 0, tiles_[dev]->size());
    return *pools_[dev];
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
