// The engine bootstrap as the server reads it from a client socket: the
// input is the byte stream a client sent. It goes through a socketpair into
// recv_frame (engine/wire.cpp: the real framing, read_exact and all), and
// each frame's payload is parsed the way the server parses it.
//
// The server parses payloads with engine/wire's decode_hello and
// decode_verify (and compares tokens with same_token); the client's side
// (engine/link.cpp: accept -> decode_descriptor, verified -> one u64) is
// parsed on the same frames.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "common.hpp"
#include "engine/wire.hpp"

using namespace xb::engine;

namespace {

constexpr std::uint64_t kSlotLen = 1 << 20;  // any slot size; the check is what matters

// Server::hello: token, digest and the region kind (protocol 2), then
// optionally the bytes the client needs (8 more), nothing after.
void hello_payload(const std::string& payload) {
  const Hello h = decode_hello(payload);
  FUZZ_CHECK(h.token.size() <= 4096 && h.digest.size() <= 4096 && h.kind.size() <= 64, "");
  const std::size_t strings = 24 + h.token.size() + h.digest.size() + h.kind.size();
  FUZZ_CHECK(strings == payload.size() || strings + 8 == payload.size(),
             "hello parsed past its payload");
  FUZZ_CHECK(strings + 8 == payload.size() || h.need == 0, "a need without its 8 bytes");
  const Hello again = decode_hello(encode_hello(h));
  FUZZ_CHECK(again.token == h.token && again.need == h.need, "hello round trip");
  FUZZ_CHECK(same_token(h.token, h.token) && !same_token(h.token, h.token + "x"), "same_token");
}

// Server::verify: the range must lie in the slot.
void verify_payload(const std::string& payload) {
  const VerifyRequest v = decode_verify(payload, kSlotLen);
  FUZZ_CHECK(v.offset + v.length <= kSlotLen && v.offset + v.length >= v.offset,
             "verify range escapes the slot");
}

// ServerLink: accept carries the descriptor, verified one u64.
void client_payload(const Frame& f) {
  if (f.type == MsgType::accept) {
    const SegmentDescriptor d = decode_descriptor(f.payload);
    FUZZ_CHECK(!d.worker_address.empty() && (!d.rkey.empty() || !d.ipc.empty()), "");
    FUZZ_CHECK(
        d.ipc.empty() || (d.ipc_offset <= d.ipc_size && d.length <= d.ipc_size - d.ipc_offset),
        "accepted a range outside its IPC region");
  } else if (f.type == MsgType::verified) {
    Reader r(f.payload);
    r.u64();
    r.done();
  }
}

struct Pair {
  int fd[2] = {-1, -1};
  Pair() {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) != 0)
      FUZZ_CHECK(false && "socketpair failed", "");
  }
  ~Pair() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;  // stays within one socket buffer: no writer thread needed
  Pair p;
  std::size_t off = 0;
  while (off < size) {
    const ssize_t n = send(p.fd[1], data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) return 0;  // buffer full: skip this input rather than block
    off += static_cast<std::size_t>(n);
  }
  shutdown(p.fd[1], SHUT_WR);  // the client is done: reads past the end see EOF

  bool hello_done = false;
  try {
    for (int frames = 0; frames < 64; ++frames) {
      const Frame f = recv_frame(p.fd[0], 1.0);
      try {
        client_payload(f);  // the client's parse of the same bytes, independent of the server's
      } catch (const ProtocolError&) {
      }
      // Server::dispatch
      if (f.type == MsgType::hello && !hello_done) {
        hello_payload(f.payload);
        hello_done = true;
        continue;
      }
      if (!hello_done) throw ProtocolError("expected a hello first");
      if (f.type == MsgType::verify) {
        verify_payload(f.payload);
        continue;
      }
      if (f.type == MsgType::bye) break;
      throw ProtocolError("unexpected message");
    }
  } catch (const ProtocolError&) {
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "the bootstrap threw something other than ProtocolError", e.what());
  }
  return 0;
}
