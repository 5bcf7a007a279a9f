#pragma once
// How one ladder step's dispatch and combine move their bytes: the
// buffers laid out by coll/ep_model (EpLayout), filled outside timing, and
// one call per phase. A method is one class here and one row of EpMethod.
#include <memory>
#include <span>

#include "backend/backend.hpp"
#include "coll/communicator.hpp"
#include "coll/ep_model.hpp"
#include "family/ep/ep_bench.hpp"
#include "runtime/runtime.hpp"

namespace xb {

enum class EpPhase { dispatch, combine };

class EpExchange {
 public:
  virtual ~EpExchange() = default;
  // Starts the phase (queued on a device stream, or done on return on the host).
  virtual void run(EpPhase p) = 0;
  // Waits until the phases run so far are complete.
  virtual void synchronize() = 0;
  // The library's stream marks (device-timed chains), null on the host.
  virtual std::unique_ptr<StreamMarks> marks(int count) = 0;
  // Fills the receive buffer of `p` with 0xFF (outside timing, before a check).
  virtual void poison(EpPhase p) = 0;
  // What this rank received in `p`, in the layout's order.
  virtual void read(EpPhase p, std::span<std::byte> out) = 0;
};

struct EpStep {
  const EpTrace& trace;
  const EpPlan& plan;
  int rank;
  EpLayout dispatch, combine;  // this rank's
};

// The Communicator's alltoallv over the backend's buffers (any backend).
std::unique_ptr<EpExchange> make_alltoallv_exchange(Communicator& comm, Backend& backend,
                                                    const EpStep& step);
// MPI one-sided puts into per-source slots of each peer's window, then a
// flag; each rank polls its flags (host memory only).
std::unique_ptr<EpExchange> make_put_exchange(Runtime& rt, const EpStep& step);

}  // namespace xb
