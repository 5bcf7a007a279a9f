#pragma once
// What one member of a pair does in a step of `xferbench fleet`, over the
// runtime's point-to-point transfers (MPI over UCX on the host backend):
// a -> b, b -> a, both at once (size bytes each, timed on the sender from
// the pair's sync to the receiver's 1-byte acknowledgement), then an
// 8-byte ping-pong (one-way = round trip / 2). Every wait has the step's
// deadline: a pair that does not answer is a failed pair, not a hung run.
#include <cstdint>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "runtime/runtime.hpp"

namespace xb {

struct PairPlan {
  Bytes size = 64ULL << 20;
  int iters = 5, warmup = 1;
  int pings = 200;  // timed ping-pongs (warm-up: a tenth)
  double deadline_s = 60;
  bool check = true;
};

// This member's role in a step.
struct PairRole {
  int peer = -1;         // -1: rests this step
  bool first = false;    // the pair's a
  double tx_factor = 1;  // XFERBENCH_HOST_THROTTLE on what it sends to `peer` (1: none)
};

// What one side measured: as the sender of its direction, both at once,
// and (a only) the ping-pong; times in us.
struct PairSide {
  std::vector<double> send_us, both_us, ping_us;
  bool checked = false, verified = true;
  std::string error;  // the step failed on this side: why
};
std::string side_to_wire(const PairSide& s);
PairSide side_from_wire(const std::string& text);  // RuntimeError when malformed

// The buffers every step reuses, alive for the whole run (a transfer left
// behind by a pair past its deadline may still land in them).
struct PairBuffers {
  std::vector<std::byte> send, recv;
  std::vector<std::byte> small_send, small_recv;
  explicit PairBuffers(Bytes size, int rank);
};

// Runs this member's part of the step (tags `tag` .. `tag` + 15). Errors
// (the deadline, a mismatch) are in the result, never thrown.
PairSide run_pair_side(Runtime& rt, const PairRole& role, const PairPlan& plan, PairBuffers& buf,
                       int tag);

}  // namespace xb
