#pragma once
// A documented test-only knob: XFERBENCH_HOST_THROTTLE slows the host
// backend's copies of one device, or one direction of it, so tests can
// prove that `doctor` names a slow device, pair or direction. Its value is
// a comma list of DEVICE:FACTOR[:DIR], FACTOR in (0, 1] (0.4: 40 % of the
// speed), DIR one of h2d, d2h, d2d, p2p (default: every copy that touches
// the device); or A-B:FACTOR, the p2p copies between devices A and B (both
// ways) only; or host:FACTOR, the copies touching host memory that is not
// bound to a device's node (the default allocation: a misplaced buffer). Each worker stretches its
// part of a matching copy by 1/FACTOR after doing it, so the copy really takes that long. Ranks
// too, for fleet's pairs on one machine: rankR:FACTOR[:tx|rx] slows what rank R sends (tx),
// receives (rx) or both (a slow "host"), and rankA-rankB:FACTOR the traffic between two ranks both
// ways (a slow "link"); the sender stretches each transfer the same way.
#include <string>
#include <vector>

namespace xb::host {

struct Throttle {
  int device = 0;
  int peer = -1;  // A-B: the other device of the pair; -1: any
  double factor = 1;
  std::string dir;    // "" = every direction
  bool rank = false;  // rankR / rankA-rankB: device and peer are ranks
  std::string item;   // as written, for the messages
};

// Throws UsageError naming the variable for a malformed list.
std::vector<Throttle> parse_throttle(const std::string& text);

// Throws UsageError naming the first entry that names nothing of this run
// (a device beyond `devices`, a rank beyond `ranks`, a device or rank paired
// with itself) and what exists: an entry that matches no copy would be
// silently ignored, and a test relying on it would measure nothing slow.
void check_throttle_targets(const std::string& text, const std::vector<Throttle>& t, int devices,
                            int ranks);

// The factor for a copy in direction `dir` ("h2d", "d2h", "d2d", "p2p",
// "h2h") between devices `a` and `b` (-1 for host memory): the product of
// the matching entries, 1 when none matches.
double throttle_factor(const std::vector<Throttle>& t, const std::string& dir, int a, int b);

// The factor for what rank `from` sends to rank `to`: the product of the
// rank entries that match (1 when none does).
double rank_throttle(const std::vector<Throttle>& t, int from, int to);

}  // namespace xb::host
