#pragma once
// A small transfer engine on UCX (ucp): a worker per engine, registered
// memory with packed remote keys, endpoints to peers' segments, and one-sided
// read/write as single requests or posted in batches. Peer failure (UCX's
// peer error mode) and per-request timeouts become RuntimeError, never a
// hang. UCX types stay in ucx.cpp.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/wire.hpp"

namespace xb::engine {

std::string ucx_version();
// Whether this UCX registers and moves memory of that type ("cuda",
// "rocm"; "host" always): a CUDA-enabled UCX reports cuda. Asked of a UCP
// context at run time, so the UCX actually loaded decides.
bool ucx_supports_memory(const std::string& type);

class Worker {
 public:
  // net_devices: UCX_NET_DEVICES for this worker's context alone ("" keeps
  // the environment's): a lane's NIC. tagged: with tag matching too
  // (ucx_tag.hpp). Throws RuntimeError.
  explicit Worker(const std::string& net_devices = {}, bool tagged = false);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  std::string address() const;
  // Drives communication; servers call it while they wait (TCP needs it).
  // Returns whether anything happened.
  bool progress();
  // For sleeping in poll(): the worker's event fd, and arm() before each
  // sleep; arm() returns false when events are pending (progress first).
  int event_fd() const;
  bool arm();
  void* context() const { return ctx_; }
  void* handle() const { return worker_; }

 private:
  void* ctx_ = nullptr;
  void* worker_ = nullptr;
};

// Memory registered with a worker's context.
class Region {
 public:
  Region(Worker& w, void* data, std::uint64_t size);
  // Lets UCX allocate the memory: shareable, so shared-memory transports can
  // reach it directly instead of emulating one-sided access through the target.
  Region(Worker& w, std::uint64_t size);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  std::string packed_rkey() const;
  // A descriptor of [offset, offset + length) of this region.
  SegmentDescriptor describe(std::uint64_t offset, std::uint64_t length,
                             std::uint64_t pattern_offset) const;
  std::byte* data() const { return static_cast<std::byte*>(data_); }
  std::uint64_t size() const { return size_; }

 private:
  Worker& worker_;
  void* data_;
  std::uint64_t size_;
  void* memh_ = nullptr;
};

// One transfer: local buffer <-> offset in the peer's segment.
struct Xfer {
  std::byte* local;
  std::uint64_t remote_offset;
  std::uint64_t length;
};

enum class Op { read, write };

class Remote {
 public:
  // peer_errors: UCX's peer error mode (a failing peer completes requests
  // with an error). On UCX 1.13 it excludes the shared-memory transports.
  Remote(Worker& w, const SegmentDescriptor& d, double timeout_s, bool peer_errors);
  ~Remote();
  Remote(const Remote&) = delete;
  Remote& operator=(const Remote&) = delete;

  // Blocking: every transfer completes (writes: at the peer, after a flush).
  void transfer(Op op, const Xfer& x);
  // Posts a batch and returns; wait() completes it (writes: and flushes).
  void post(Op op, const std::vector<Xfer>& batch);
  void wait();
  // Transfers posted and not yet completed (an immediate one is never
  // pending), and the first `n` of them completed in posting order: a batch
  // of several posted at once, waited for one at a time (kv's requests).
  std::size_t pending() const { return pending_.size(); }
  void wait_first(std::size_t n);
  // Completes every write posted so far at the peer (a flush).
  void flush();
  std::uint64_t length() const { return seg_.length; }
  std::uint64_t pattern_offset() const { return seg_.pattern_offset; }
  // "posix/memory sysv/memory" etc.: the lanes UCX chose for this endpoint.
  std::string transports() const;

 private:
  void* start(Op op, const Xfer& x);
  void complete(void* request, const char* what);
  void check_peer() const;

  Worker& worker_;
  SegmentDescriptor seg_;
  double timeout_s_;
  void* ep_ = nullptr;
  void* rkey_ = nullptr;
  std::vector<void*> pending_;
  bool pending_writes_ = false;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace xb::engine
