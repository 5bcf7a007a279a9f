#pragma once
// The windows of `xferbench remote` on one rank, behind one interface so a
// single sweep (remote_bench.cpp) drives both kinds:
//  - host windows: MPI windows of host memory (shm on one host, else rma);
//    core = memcpy through a staging tile, dma = the host copy engine (shm)
//    or MPI rget/rput (rma); timed by the clock and the cycle counter;
//  - device windows (GPU backends): each rank's window is memory of its GPU
//    (host-local rank modulo the GPUs, so several ranks may share one),
//    exported through the backend's IPC and mapped by the root; core = SM
//    kernels, dma = copy engines, timed by device events.
// Only the root (cfg.root) moves bytes; the peer (remote_peer) owns the window
// it reads or writes. Every rank holds a RemoteWindows and makes the same
// collective calls in the same order.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "family/remote/remote_bench.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// The byte patterns: rank r's window holds remote_window_seed(r); the data
// a put sends, remote_source_seed(root).
inline std::uint64_t remote_window_seed(int rank) {
  return 0xA11CE000ULL + static_cast<std::uint64_t>(rank);
}
inline std::uint64_t remote_source_seed(int rank) {
  return 0xB0B00000ULL + static_cast<std::uint64_t>(rank);
}

// The rank whose window the root reads or writes.
inline int remote_peer(const Runtime& rt, const RemoteConfig& cfg) {
  return cfg.peer ? *cfg.peer : (cfg.root + 1) % rt.size();
}

// The root's timing of one (op, method, size).
struct RemoteTimed {
  std::vector<double> us;
  double cycles = 0;  // mean per transfer
};

class RemoteWindows {
 public:
  virtual ~RemoteWindows() = default;
  // Outside timing, on every rank: the peer's window holds its own pattern
  // (a put must replace it), the root's buffer is poisoned (get) or holds
  // the source pattern (put).
  virtual void prepare(RemoteOp op, Bytes n) = 0;
  // Collective: orders every rank's stores before it against loads after it.
  virtual void settle() = 0;
  // Root only: `warmup` untimed, then `iters` timed transfers of n bytes.
  virtual RemoteTimed time(RemoteOp op, Method m, Bytes n, int warmup, int iters) = 0;
  // After settle(): the first n bytes the receiving rank (get: the root,
  // put: the peer) got; on other ranks, or without cfg.check on device
  // windows, the span's contents are meaningless.
  virtual std::span<std::byte> received(RemoteOp op, Bytes n) = 0;
  // Collective, once after the sweep: no rank touches a peer's window after.
  virtual void finish() = 0;
  // The records' transport field and the run's summary parameters.
  virtual std::string transport() const = 0;
  virtual Params summary() const = 0;
};

// Whether this run's windows can be made on `backend` (device windows when
// it shares device memory between processes, else host windows): the
// reason make_*_windows would throw as a UsageError. `rt` may be null
// (before MPI starts): then where the ranks run is not checked.
Support windows_fit(const Runtime* rt, const Backend& backend, const RemoteConfig& cfg);

// Collective. Throws UsageError (same on every rank) for --tile under 64
// bytes, RuntimeError (agreed) when a rank cannot allocate its buffers.
std::unique_ptr<RemoteWindows> make_host_windows(Runtime& rt, Backend& backend,
                                                 const RemoteConfig& cfg);

// Collective, for backends with device IPC. Throws UsageError for
// --transport or ranks on several hosts, RuntimeError (agreed) when a rank
// cannot allocate, export or import a buffer.
std::unique_ptr<RemoteWindows> make_device_windows(Runtime& rt, Backend& backend,
                                                   const RemoteConfig& cfg);

}  // namespace xb
