// The client's bootstrap link: connect with a deadline, hello, descriptor.
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "core/tcp.hpp"
#include "core/timer.hpp"
#include "engine/bootstrap.hpp"

namespace xb::engine {

ServerLink::ServerLink(const std::string& host, int port, const std::string& token,
                       const std::string& digest, const std::string& kind, std::uint64_t need,
                       double connect_timeout_s, double io_timeout_s)
    : io_timeout_s_(io_timeout_s) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
    throw UsageError(fmt::format("--connect: cannot resolve '{}'", host));
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(connect_timeout_s));
  std::string why = "no answer";
  while (fd_ < 0) {
    fd_ = tcp_connect(res->ai_addr, res->ai_addrlen, 200, why);
    if (fd_ >= 0 || Clock::now() > deadline) break;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(100));  // the server may still be starting
  }
  freeaddrinfo(res);
  if (fd_ < 0)
    throw UsageError(
        fmt::format("cannot reach the engine server at {}:{} within --connect-timeout {} s ({})",
                    host, port, connect_timeout_s, why));
  try {
    // the hello's answer within what is left of the connect timeout (a second at least)
    const double left =
        std::max(1.0, std::chrono::duration<double>(deadline - Clock::now()).count());
    send_frame(fd_, {MsgType::hello, encode_hello({token, digest, kind, need})}, left);
    const Frame f = recv_frame(fd_, left);
    if (f.type == MsgType::reject)
      throw UsageError(fmt::format("the engine server refused this client: {}", f.payload));
    if (f.type != MsgType::accept) throw ProtocolError("unexpected answer to hello");
    segment_ = decode_descriptor(f.payload);
  } catch (const ProtocolError& e) {  // not an engine server of this version: a wrong address
    close(fd_);
    throw UsageError(fmt::format("engine bootstrap with {}:{} failed: {}", host, port, e.what()));
  } catch (...) {
    close(fd_);
    throw;
  }
}

ServerLink::~ServerLink() {
  if (fd_ >= 0) close(fd_);
}

std::int64_t ServerLink::verify(std::uint64_t offset, std::uint64_t length, std::uint64_t seed) {
  try {
    send_frame(fd_, {MsgType::verify, Writer().u64(offset).u64(length).u64(seed).take()},
               io_timeout_s_);
    // Checking a large slot takes the server a while, and it serves its
    // clients one message at a time: allow for others' checks before ours.
    const Frame f = recv_frame(fd_, io_timeout_s_ + 30 + static_cast<double>(length) / 1e7);
    if (f.type != MsgType::verified) throw ProtocolError("unexpected answer to verify");
    Reader r(f.payload);
    const std::uint64_t v = r.u64();
    r.done();
    return v == ~0ULL ? -1 : static_cast<std::int64_t>(v);
  } catch (const ProtocolError& e) {
    throw RuntimeError(fmt::format("verify with the engine server failed: {}", e.what()));
  }
}

std::string ServerLink::gone() const {
  pollfd p{fd_, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0)
    return {};
  return "the server is gone: its control connection closed (the server process exited or was "
         "killed)";
}

void ServerLink::bye() {
  try {
    send_frame(fd_, {MsgType::bye, ""}, io_timeout_s_);
  } catch (const ProtocolError&) {
  }
}

}  // namespace xb::engine
