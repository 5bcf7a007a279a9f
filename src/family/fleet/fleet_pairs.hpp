#pragma once
// What one member of a pair does in a step of `xferbench fleet`, over the
// runtime's point-to-point transfers (MPI over UCX on the host backend):
// a -> b, b -> a, both at once (size bytes each, timed on the sender from
// the pair's sync to the receiver's 1-byte acknowledgement), then an
// 8-byte ping-pong (one-way = round trip / 2).
//
// Time box: the pair has `box_s` seconds for its step; a -> b, b -> a and
// both at once end their iterations at 30, 60 and 85 % of it (after the
// warm-up and at least one timed transfer), the ping-pong at 95 %; a phase
// without room in the box for its warm-up (three of the pair's last
// transfer) skips it. Both
// sides agree at each sync (a flag each sends: the two go on only if both
// do), so a crawling link reports the transfers that finished, with their
// count, and the step ends near its box. A wait past the box itself is a
// failed pair: the phase it failed in is named, what finished before is
// kept. Nothing here throws on a slow or silent peer.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/corruption.hpp"
#include "core/units.hpp"
#include "runtime/runtime.hpp"

namespace xb {

struct PairPlan {
  Bytes size = 64ULL << 20;
  int iters = 5, warmup = 1;
  int pings = 200;         // timed ping-pongs (warm-up: a tenth)
  double deadline_s = 60;  // --deadline: the most a pair's step may take
  bool check = true;
  // --check every: each timed transfer checked (the sender's buffer gets the
  // iteration's own pattern first, outside its time); else the first timed one.
  bool check_every = false;
};

// The phases of a pair's step, in order.
enum class PairPhase { sync, ab, ba, both, ping, done };
const char* phase_name(PairPhase p);  // "sync", "a->b", "b->a", "both", "ping", ""

// This member's role in a step.
struct PairRole {
  int peer = -1;         // -1: rests this step
  int me = -1;           // this rank (XFERBENCH_HOST_CORRUPT's draws)
  bool first = false;    // the pair's a
  double tx_factor = 1;  // XFERBENCH_HOST_THROTTLE on what it sends to `peer` (1: none)
  std::string nic;       // the rail's NIC; "": the one whose counters moved the bytes
};

// What this side's NIC counted in one phase (core/nic_counters.hpp): the
// host's counters, so other traffic of the host adds to them.
struct PhaseNic {
  std::string nic;  // "": nothing counted (no counters, or shared memory)
  std::uint64_t tx = 0, rx = 0;
  std::vector<std::pair<std::string, std::uint64_t>> errors;  // the counters that grew, by how much
  std::string warning;  // the rail's bytes went through another NIC: which ("" none)
};

// What one side measured: as the sender of its direction, both at once,
// and (a only) the ping-pong; times in us.
struct PairSide {
  std::vector<double> send_us, both_us, ping_us;
  // What this side received and checked: as the receiver of its one
  // direction, and in both at once (core/corruption.hpp).
  CheckTally got_one, got_both;
  std::string error;                      // the step failed on this side: why
  PairPhase failed_in = PairPhase::done;  // where (done: it did not fail)
  double elapsed_s = 0;                   // the side's time in the step
  std::vector<PhaseNic> nics;             // a->b, b->a, both: as far as the step got
};
std::string side_to_wire(const PairSide& s);
PairSide side_from_wire(const std::string& text);  // RuntimeError when malformed

// The buffers every step reuses, alive for the whole run. A pair past its
// box cancels what it still has posted; a receive that cannot be cancelled
// may still write its buffer, so the receive buffers are retired (kept
// alive, never read again) and fresh ones take their place: a late byte
// of one pair never lands in another pair's figures or verification.
struct PairBuffers {
  std::vector<std::byte> send, recv;
  std::vector<std::byte> small_send, small_recv;
  explicit PairBuffers(Bytes size, int rank);
  void retire_receives();
  std::size_t retired() const { return retired_.size() / 2; }

 private:
  std::vector<std::vector<std::byte>> retired_;
};

// Where a pair's messages go: the runtime's point-to-point (MPI over UCX,
// whichever NIC it picks), or a rail's own worker on one NIC (fleet_rails.hpp).
class PairLink {
 public:
  virtual ~PairLink() = default;
  virtual std::unique_ptr<Runtime::Transfer> isend(std::span<const std::byte> data, int peer,
                                                   int tag) = 0;
  virtual std::unique_ptr<Runtime::Transfer> irecv(std::span<std::byte> data, int peer,
                                                   int tag) = 0;
};
class RuntimeLink final : public PairLink {
 public:
  explicit RuntimeLink(Runtime& rt) : rt_(rt) {}
  std::unique_ptr<Runtime::Transfer> isend(std::span<const std::byte> data, int peer,
                                           int tag) override {
    return rt_.isend(data, peer, tag);
  }
  std::unique_ptr<Runtime::Transfer> irecv(std::span<std::byte> data, int peer, int tag) override {
    return rt_.irecv(data, peer, tag);
  }

 private:
  Runtime& rt_;
};

// Runs this member's part of the step (tags `tag` .. `tag` + 15) within
// `box_s` seconds. Errors (the box, a mismatch) are in the result, never thrown.
PairSide run_pair_side(PairLink& link, const PairRole& role, const PairPlan& plan, PairBuffers& buf,
                       int tag, double box_s);

// The time box of the next step, the same on every rank (each computes it
// from the same gathered figures): 16x the lower quartile of the step
// times of the last 256 pairs that finished, at least 5 s, at most
// --deadline; --deadline while no pair has finished yet.
class PairBox {
 public:
  explicit PairBox(double deadline_s) : deadline_s_(deadline_s) {}
  double next() const;
  void finished(double elapsed_s);  // a pair that completed its step
  static constexpr double kFactor = 16, kFloor_s = 5;
  static constexpr std::size_t kRecent = 256;

 private:
  double deadline_s_;
  std::vector<double> recent_;
  std::size_t pos_ = 0;
};

}  // namespace xb
