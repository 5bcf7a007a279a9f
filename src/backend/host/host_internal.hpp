#pragma once
// Internal to backend/host: the concrete backend, its streams, events and
// copiers. Only host_*.cpp include this.
#include <map>
#include <mutex>

#include "backend/backend.hpp"
#include "backend/host/throttle.hpp"
#include "backend/host/worker_pool.hpp"
#include "core/corruption.hpp"

namespace xb::host {

struct NodeInfo {
  unsigned os_index = 0;
  std::vector<unsigned> cpus;
  Bytes memory = 0;
};

class HostBackend;

// Completion state shared by an event and the job that signals it.
struct EventState {
  std::atomic<int> done{0};
  Clock::time_point when{};
  std::string error;
};

class HostEvent final : public Event {
 public:
  HostEvent() : state_(std::make_shared<EventState>()) {}
  void synchronize() override;
  bool query() override;
  double elapsed_us_since(const Event& start) const override;
  // Re-arms the event for a new record(); returns the state to signal.
  std::shared_ptr<EventState> arm();
  Clock::time_point when() const { return state_->when; }
  const std::shared_ptr<EventState>& state() const { return state_; }

 private:
  std::shared_ptr<EventState> state_;
};

// The direction of a copy between these buffers ("h2d", "d2h", "d2d",
// "p2p", "h2h") and the factor XFERBENCH_HOST_THROTTLE gives it.
std::string copy_direction(const Buffer& src, const Buffer& dst);
// Wraps a worker's part so that it takes 1/factor of its time (factor < 1).
WorkerPool::Part throttled(WorkerPool::Part part, double factor);
// XFERBENCH_HOST_CORRUPT (core/corruption.hpp): `then`, or, for a copy
// the knob draws, `then` after one bit of the n bytes at `d` is flipped.
WorkerPool::Done corrupted(const Buffer& src, const Buffer& dst, void* d, Bytes n,
                           WorkerPool::Done then = {});

class HostStream final : public Stream {
 public:
  HostStream(int device, WorkerPool& engine, const std::vector<Throttle>* throttles = nullptr)
      : device_(device), engine_(engine), throttles_(throttles) {}
  int device() const override { return device_; }
  void copy_async(const Buffer& src, Bytes src_off, Buffer& dst, Bytes dst_off, Bytes n) override;
  void record(Event& event) override;
  void synchronize() override;

 private:
  int device_;
  WorkerPool& engine_;
  const std::vector<Throttle>* throttles_;
};

class HostBackend final : public Backend {
 public:
  HostBackend();
  ~HostBackend() override;
  std::string name() const override { return "host"; }
  const std::vector<DeviceInfo>& devices() const override { return devices_; }
  Capabilities capabilities() const override;
  Support copier_fits(Method m, const CopierOptions& opts) const override;
  Support method_support(Method m) const override;
  Support peer_access(int src, int dst) const override;
  std::string link_type(int a, int b) const override;
  Bytes free_memory(MemKind kind, int device) const override;
  std::unique_ptr<Buffer> allocate(MemKind kind, int device, Bytes size) override;
  // Pinned host memory bound to the device's node (its id kept in device()).
  std::unique_ptr<Buffer> allocate_pinned_near(int device, Bytes size) override;
  // hugetlb pages where enough are reserved, THP (madvise) otherwise; the
  // choice is made per buffer, so a run may mix them (the note says so).
  Support use_huge_pages() override;
  std::string huge_pages_note() const override;
  void write(Buffer& dst, Bytes offset, std::span<const std::byte> src) override;
  void read(const Buffer& src, Bytes offset, std::span<std::byte> dst) override;
  std::unique_ptr<Stream> create_stream(int device, const CopierOptions& opts) override;
  std::unique_ptr<Event> create_event() override;
  std::unique_ptr<Copier> copier(Method m, const CopierOptions& opts) override;
  // MPI over the runtime's world, in host memory.
  std::unique_ptr<Communicator> communicator(Runtime& rt) override;
  // Device memory only (a node's); the chain is chased by one worker of the
  // chaser's engine, on its node's CPUs (host_chase.cpp).
  std::unique_ptr<Chain> make_chain(MemKind kind, int device, Bytes bytes,
                                    std::uint64_t seed) override;
  // The largest cache hwloc reports (the last level), 0 when none.
  Bytes last_level_cache() const;

  // The CPUs a device's workers run on (its node's).
  const std::vector<unsigned>& device_cpus(int device) const;
  // The copy engine of a device with `threads` workers, started on first use.
  WorkerPool& engine(int device, int threads);
  // XFERBENCH_HOST_THROTTLE, parsed once (test-only fault injection).
  const std::vector<Throttle>& throttles() const { return throttles_; }
  double throttle(const Buffer& src, const Buffer& dst) const {
    return throttle_factor(throttles_, copy_direction(src, dst), src.device(), dst.device());
  }

 private:
  void check_device(int device) const;
  void* bind_to_node(int device, Bytes size);  // hwloc, bound to the device's node
  // A buffer of `kind` on huge pages (use_huge_pages), bound to the device's
  // node for device memory, locked for pinned.
  std::unique_ptr<Buffer> allocate_huge(MemKind kind, int device, Bytes size);

  struct Topo;  // hwloc handle, kept out of this header
  std::unique_ptr<Topo> topo_;
  std::vector<NodeInfo> nodes_;
  std::vector<int> device_node_;  // device id -> index into nodes_
  std::vector<DeviceInfo> devices_;
  std::vector<Throttle> throttles_;
  std::mutex engines_mutex_;
  std::map<std::pair<int, int>, std::unique_ptr<WorkerPool>> engines_;
  struct Huge {  // --host-mem huge: on, and what the buffers got
    bool on = false;
    std::mutex mu;
    std::map<std::string, std::pair<Bytes, Bytes>> got;  // source -> (bytes, on huge pages)
  };
  std::unique_ptr<Huge> huge_ = std::make_unique<Huge>();
};

std::unique_ptr<Copier> make_dma_copier(HostBackend& backend, const CopierOptions& opts);
std::unique_ptr<Copier> make_core_copier(HostBackend& backend, const CopierOptions& opts);

}  // namespace xb::host
