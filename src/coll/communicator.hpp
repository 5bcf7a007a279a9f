#pragma once
// One interface for the collective libraries: MPI on hosts, NCCL on NVIDIA
// GPUs, HCCL on Ascend NPUs, behind the same calls. Each backend makes its
// own (Backend::communicator); coll knows no backend. Buffers are the
// library's memory kind (host for MPI, device for NCCL/HCCL). Counts follow
// nccl-tests: allreduce, broadcast, reduce, sendrecv take the message's
// element count; allgather the per-rank send count; reducescatter the
// per-rank receive count; alltoall the count per peer; gather the per-rank
// send count; scatter the per-rank receive count. In place: `send == recv`,
// except allgather and gather, whose input already sits at its slot of the
// result (`send == recv + rank * count`), and scatter, whose result is this
// rank's slot of the input (`recv == send + rank * count`).
// A library without a collective keeps the default, which throws
// NotSupported: its records are `waived` with that reason.
#include <fmt/format.h>

#include <memory>
#include <span>
#include <string>

#include "coll/dtype.hpp"
#include "coll/model.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/registry.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// Marks on the stream a device library runs its collectives on, so that
// they are timed by the device clock and queued back to back (nccl-tests'
// way) instead of one host-timed call and synchronize at a time.
class StreamMarks {
 public:
  virtual ~StreamMarks() = default;
  // Records mark `i` after the calls queued so far (0 <= i < count).
  virtual void mark(int i) = 0;
  // Device time between two marks, in us; valid after synchronize().
  virtual double elapsed_us(int from, int to) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "mpi"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual MemKind buffer_kind() const = 0;
  virtual int device() const = 0;  // the device its buffers live on, -1 for host
  // Where an in-place collective leaves this rank's result, in elements
  // from the start of the buffer (MPI's reduce_scatter: 0; NCCL's: rank*count).
  virtual std::size_t inplace_result_offset(CollOp op, std::size_t recv_count) const = 0;
  // Whether the library takes this combination; its records are `waived`
  // with the reason otherwise (HCCL has no avg, no uint8/double reductions).
  virtual Support supports(CollOp, DType, RedOp) const { return Support::yes(); }
  // Scratch for in-place calls of up to `bytes`, allocated now, outside timing.
  virtual void reserve(std::size_t /*bytes*/) {}

  virtual void allreduce(const void* send, void* recv, std::size_t count, DType t, RedOp op) = 0;
  virtual void allgather(const void* send, void* recv, std::size_t send_count, DType t) = 0;
  virtual void reducescatter(const void* send, void* recv, std::size_t recv_count, DType t,
                             RedOp op) = 0;
  virtual void broadcast(const void* send, void* recv, std::size_t count, DType t, int root) = 0;
  virtual void reduce(const void* send, void* recv, std::size_t count, DType t, RedOp op,
                      int root) = 0;
  virtual void alltoall(const void* send, void* recv, std::size_t count_per_peer, DType t) = 0;
  // Sends to rank+1 and receives from rank-1 (a ring step, nccl-tests' sendrecv).
  virtual void sendrecv(const void* send, void* recv, std::size_t count, DType t) = 0;
  // The root receives every rank's `send_count` elements, rank r's at
  // r * send_count of `recv` (`recv` matters at the root only).
  virtual void gather(const void* /*send*/, void* /*recv*/, std::size_t /*send_count*/, DType,
                      int /*root*/) {
    throw NotSupported(fmt::format("{} has no gather", name()));
  }
  // Rank r receives `recv_count` elements of the root's `send`, from r * recv_count.
  virtual void scatter(const void* /*send*/, void* /*recv*/, std::size_t /*recv_count*/, DType,
                       int /*root*/) {
    throw NotSupported(fmt::format("{} has no scatter", name()));
  }
  // Uneven all-to-all: `send_counts[d]` elements from `send + send_displs[d]`
  // go to rank d; `recv_counts[s]` elements from rank s land at
  // `recv + recv_displs[s]`. Counts and displacements in elements, size()
  // entries each. Never in place (the two layouts differ under skew).
  virtual void alltoallv(const void* /*send*/, std::span<const std::size_t> /*send_counts*/,
                         std::span<const std::size_t> /*send_displs*/, void* /*recv*/,
                         std::span<const std::size_t> /*recv_counts*/,
                         std::span<const std::size_t> /*recv_displs*/, DType) {
    throw NotSupported(fmt::format("{} has no alltoallv", name()));
  }
  // Waits until this rank's issued collectives are complete (device streams).
  virtual void synchronize() = 0;
  // Whether the library runs its calls on a device stream (then it has
  // stream_marks); MPI completes each call on the calling thread.
  virtual bool on_stream() const { return false; }
  // `count` marks on the library's stream, made now (outside timing); null
  // for libraries that complete each call on the calling thread (MPI).
  virtual std::unique_ptr<StreamMarks> stream_marks(int /*count*/) { return nullptr; }
  // Graph capture (nccl-tests -G): the calls and marks queued after
  // begin_capture() are captured into a graph, which end_capture_and_replay()
  // instantiates and launches on the stream (synchronize() waits for it).
  // begin_capture() returns false where the library has no graphs.
  virtual bool can_capture() const { return false; }
  virtual bool begin_capture() { return false; }
  virtual void end_capture_and_replay() {}
  // After a failure inside capture: ends it and drops what was captured.
  virtual void abort_capture() noexcept {}
};

// The MPI communicator over the runtime's world (host memory).
std::unique_ptr<Communicator> make_mpi_communicator(Runtime& rt);

}  // namespace xb
