// The engine client's lanes: ucx (Direct), staged, ipc (engine_local.hpp).
#include "family/engine/engine_local.hpp"

#include <algorithm>
#include <cstring>

#include "core/pattern.hpp"
#include "engine/bootstrap.hpp"

namespace xb {
namespace {

using engine::Op;

// Client memory in a backend buffer: filled, poisoned and read back
// through the backend (device memory need not be host-addressable).
class OnBuffer : public EngineLocal {
 public:
  void fill() override {
    std::vector<std::byte> v(part_.length);
    fill_pattern(std::span(v), engine::kClientSeed, part_.base);
    be_.write(memory(), 0, v);
  }
  void poison() override {
    be_.write(memory(), 0, std::vector<std::byte>(part_.length, std::byte{0x5A}));
  }
  std::vector<std::byte> contents() override {
    std::vector<std::byte> v(part_.length);
    be_.read(memory(), 0, v);
    return v;
  }

 protected:
  OnBuffer(Backend& be, const EnginePart& p) : be_(be), part_(p) {}
  virtual Buffer& memory() = 0;
  Backend& be_;
  EnginePart part_;
};

// Memory UCX registers: the transfers go straight from it.
class Direct final : public EngineLocal {
 public:
  // `buf` null: UCX allocates host memory (shareable: shared-memory
  // transports reach it directly); else the backend's buffer, registered.
  Direct(engine::Worker& w, std::unique_ptr<Buffer> buf, Backend& be, const EnginePart& p,
         const engine::SegmentDescriptor& seg, const EngineClientConfig& cfg)
      : be_(be),
        part_(p),
        buf_(std::move(buf)),
        region_(buf_ ? engine::Region(w, buf_->data(), p.length) : engine::Region(w, p.length)),
        remote_(w, seg, cfg.timeout_s, cfg.peer_errors) {}
  void transfer(Op op, const EngineReq& r) override {
    remote_.transfer(op, {region_.data() + r.offset, part_.base + r.offset, r.length});
  }
  void post(Op op, const std::vector<EngineReq>& batch) override {
    xfers_.clear();
    for (const EngineReq& r : batch)
      xfers_.push_back({region_.data() + r.offset, part_.base + r.offset, r.length});
    remote_.post(op, xfers_);
  }
  void wait() override { remote_.wait(); }
  void fill() override {
    std::vector<std::byte> v(part_.length);
    fill_pattern(std::span(v), engine::kClientSeed, part_.base);
    put(v);
  }
  void poison() override { put(std::vector<std::byte>(part_.length, std::byte{0x5A})); }
  std::vector<std::byte> contents() override {
    std::vector<std::byte> v(part_.length);
    if (buf_)
      be_.read(*buf_, 0, v);
    else
      std::memcpy(v.data(), region_.data(), part_.length);
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
  EnginePart part_;
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
  Staged(engine::Worker& w, Backend& be, const EnginePart& p, const engine::SegmentDescriptor& seg,
         const EngineClientConfig& cfg)
      : OnBuffer(be, p),
        chunk_(std::min(cfg.stage_chunk, p.length)),
        dev_(be.allocate(MemKind::device, p.device, p.length)),
        stream_(be.create_stream(p.device, {})),
        done_(be.create_event()),
        remote_(w, seg, cfg.timeout_s, cfg.peer_errors) {
    for (auto& b : bounce_) {
      b.buf = be.allocate(MemKind::pinned, p.device, chunk_);
      b.region = std::make_unique<engine::Region>(w, b.buf->data(), chunk_);
    }
  }
  void transfer(Op op, const EngineReq& r) override { op == Op::write ? out(r) : in(r); }
  // A batch goes request by request through the pipeline.
  void post(Op op, const std::vector<EngineReq>& batch) override {
    for (const EngineReq& r : batch) transfer(op, r);
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
  engine::Xfer xfer(std::size_t i, const EngineReq& r, const std::pair<Bytes, Bytes>& c) {
    return {bounce_[i % 2].region->data(), part_.base + r.offset + c.first, c.second};
  }
  // device -> bounce -> server.
  void out(const EngineReq& r) {
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
  void in(const EngineReq& r) {
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
// per request (sync) or per batch (async). When the server is this process
// (the selftest), the backend maps its own export: a process cannot open
// its own CUDA IPC handles.
class Ipc final : public OnBuffer {
 public:
  Ipc(Backend& be, const EnginePart& p, const engine::SegmentDescriptor& seg)
      : OnBuffer(be, p),
        offset_(seg.ipc_offset + p.base),
        remote_(be.import_buffer(seg.ipc, p.device, seg.ipc_size)),
        local_(
            be.allocate(p.client_device ? MemKind::device : MemKind::pinned, p.device, p.length)),
        stream_(be.create_stream(p.device, {})),
        done_(be.create_event()) {}
  void transfer(Op op, const EngineReq& r) override {
    enqueue(op, r);
    wait();
  }
  void post(Op op, const std::vector<EngineReq>& batch) override {
    for (const EngineReq& r : batch) enqueue(op, r);
  }
  void wait() override {
    stream_->record(*done_);
    done_->synchronize();
  }
  std::string transports() const override { return be_.name() + " ipc (copy engine)"; }

 private:
  Buffer& memory() override { return *local_; }
  void enqueue(Op op, const EngineReq& r) {
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

}  // namespace

std::unique_ptr<EngineLocal> make_engine_local(engine::Worker& w, Backend& be, const EnginePart& p,
                                               const engine::SegmentDescriptor& seg,
                                               const EngineClientConfig& cfg) {
  switch (p.lane) {
    case EngineLane::ipc:
      return std::make_unique<Ipc>(be, p, seg);
    case EngineLane::staged:
      return std::make_unique<Staged>(w, be, p, seg, cfg);
    default:
      return std::make_unique<Direct>(
          w,
          p.client_device  ? be.allocate(MemKind::device, p.device, p.length)
          : cfg.huge_pages ? be.allocate(MemKind::pageable, -1, p.length)
                           : nullptr,
          be, p, seg, cfg);
  }
}

}  // namespace xb
