#pragma once
// Point-to-point messages over UCX's tag matching, on a worker of their own
// bound to one NIC (UCX_NET_DEVICES for this worker's context alone):
// `fleet --rails` pairs NIC i of host A with NIC i of host B this way. A
// message to rank r carries the sender's rank and a tag; a receive matches
// both. UCX types stay in ucx_tag.cpp.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/ucx.hpp"

namespace xb::engine {

class TagChannel {
 public:
  // A worker on `nic` (a UCX device name: "mlx5_0:1", "eth1") for `rank`.
  // Throws RuntimeError.
  TagChannel(const std::string& nic, int rank);
  ~TagChannel();
  TagChannel(const TagChannel&) = delete;
  TagChannel& operator=(const TagChannel&) = delete;

  // This worker's address, for the others to reach it.
  std::string address() const { return worker_.address(); }
  // Every rank's address (index: rank; empty: not reachable this way).
  void set_peers(std::vector<std::string> addresses);

  // One message in flight. done() drives the worker and never throws:
  // a failed message (its peer failed, a cancel) stays not done and says
  // why in error(); the caller's own deadline ends the wait.
  class Message {
   public:
    Message(TagChannel& ch, void* request) : ch_(ch), request_(request) {}
    ~Message();
    Message(const Message&) = delete;
    Message& operator=(const Message&) = delete;
    bool done();
    // Cancels, then gives it 200 ms to end either way; true when it ended.
    bool cancel();
    const std::string& error() const { return error_; }

   private:
    friend class TagChannel;
    TagChannel& ch_;
    void* request_;  // nullptr: completed (or failed)
    bool failed_ = false;
    std::string error_;
  };
  std::unique_ptr<Message> isend(std::span<const std::byte> data, int peer, int tag);
  std::unique_ptr<Message> irecv(std::span<std::byte> data, int peer, int tag);

 private:
  void* endpoint(int peer);
  Worker worker_;
  int rank_;
  std::vector<std::string> peers_;
  std::vector<void*> eps_;
  std::vector<int> peer_failed_;  // UCX's peer error handler's flags, by rank
};

}  // namespace xb::engine
