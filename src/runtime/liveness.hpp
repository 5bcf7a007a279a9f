#pragma once
// The ranks watch each other beside MPI, so that a rank killed or cut off
// mid-run ends the survivors with one error naming it, instead of leaving
// them waiting in MPI forever (MPICH over UCX has no peer-failure handling).
//
// A star of TCP connections: rank 0 (the hub) listens, every other rank
// connects to it at start-up. Each side sends a heartbeat line every half
// second from a thread of its own. A peer is lost when its connection closes
// without a goodbye (the process died: the kernel closes its sockets), when
// nothing came from it for the timeout (its link is down, or it is stopped),
// or when it left with an error and this rank is still running a timeout
// later (it waits for a rank that will not come). The hub relays a loss to
// the others before it exits, so every rank names the rank that was lost.
// No MPI here: runtime/mpi_runtime.cpp exchanges the hub's address.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xb {

// The longest heartbeat period, and the shortest timeout a user may ask for:
// two such periods (a busy node delays a heartbeat by a few hundred ms).
inline constexpr double kHeartbeatS = 0.5;
inline constexpr double kPeerTimeoutFloorS = 2 * kHeartbeatS;

// XFERBENCH_PEER_TIMEOUT: seconds of silence before a peer is declared lost
// (default 30; 0 turns the watch off). Throws UsageError on a malformed value
// or one below kPeerTimeoutFloorS (but 0).
double peer_timeout_from_env();

// The judging, pure (tested without sockets): fed the lines peers send and
// the closing of their connections, each with its time in seconds, it says
// which peer is lost and why. Lines: "hb", "bye", "bye error", and from the
// hub "lost PEER<TAB>REASON" (a loss it saw, relayed).
class PeerWatch {
 public:
  struct Lost {
    int rank = -1;         // the lost rank (-1: relayed, known by name only)
    std::string peer;      // "rank 1 (node7, 10.0.0.2)"
    std::string reason;    // "its connection closed without a goodbye (...)"
    bool relayed = false;  // seen by the hub, not by this rank
  };

  explicit PeerWatch(double timeout_s) : timeout_s_(timeout_s) {}
  void set_timeout(double timeout_s) { timeout_s_ = timeout_s; }
  void add(int rank, std::string name, double now);
  bool has(int rank) const;
  void remove(int rank);
  void on_line(int rank, std::string_view line, double now);
  // A connection that closes before its first line was a handshake the
  // peer gave up (it did not get the welcome in time and tries another
  // address): the peer is forgotten, not lost.
  void on_closed(int rank, double now);
  // The first lost peer (in the order added), nullopt while all are well.
  std::optional<Lost> check(double now) const;
  double timeout_s() const { return timeout_s_; }
  // The heartbeat period: a quarter of the timeout, at most half a second.
  double heartbeat_s() const;

 private:
  enum class State { live, left, left_error, closed, relayed };
  struct Peer {
    int rank = 0;
    std::string name;
    State state = State::live;
    double last = 0;     // when the last line came
    double changed = 0;  // when the state changed
    bool heard = false;  // a line came after the hello
    Lost relayed;        // the hub's report (State::relayed)
  };
  Peer* find(int rank);

  double timeout_s_;
  std::vector<Peer> peers_;
};

// The watch with its sockets and thread.
class Liveness {
 public:
  // `timeout_s` counts on the hub only: the others take the hub's.
  Liveness(int rank, int size, double timeout_s);
  ~Liveness();  // leave(true) unless left
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // Hub: opens the listening socket and starts watching; returns the
  // contact the others need ("PORT NONCE TIMEOUT HOST ADDR,ADDR,..."). Throws
  // RuntimeError when no socket opens. A rank that has not joined a
  // timeout later is named in a warning on stderr.
  std::string listen();
  // Other ranks: connects to the hub (each of its addresses in turn, 2 s to
  // connect and 5 s for the hub to answer the hello with the contact's
  // nonce), takes its timeout and starts watching it. Returns an empty
  // string, or why it could not.
  std::string connect(const std::string& contact);
  // This rank is done with its peers: tells them (a goodbye, or that it
  // leaves with an error), stops watching and closes. Idempotent.
  void leave(bool error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a process does, on the watcher's thread, when a peer is lost and
// just before it exits (the run's output marks its file with the lost rank).
// `why`: "rank 0 lost rank 1: ...". Empty: nothing. Must not wait long.
void set_last_words(std::function<void(const std::string& why)> fn);

// Writes `line` to stderr without stdio (another thread may hold its locks),
// without waiting more than a second for a full pipe and without SIGPIPE.
void write_now(std::string_view line);
// write_now(line), then _exit(code).
[[noreturn]] void exit_now(std::string_view line, int code);

}  // namespace xb
