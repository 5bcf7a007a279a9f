#include "core/tcp.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xb {

int tcp_listen(const sockaddr* addr, socklen_t len, int backlog, std::string& why) {
  const int fd = ::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd >= 0 && ::bind(fd, addr, len) == 0 && ::listen(fd, backlog) == 0) return fd;
  why = std::strerror(errno);
  if (fd >= 0) ::close(fd);
  return -1;
}

bool tcp_resolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const bool ok = getaddrinfo(host.c_str(), nullptr, &hints, &res) == 0 && res;
  if (res) freeaddrinfo(res);
  return ok;
}

int tcp_bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                       : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

int tcp_connect(const sockaddr* addr, socklen_t len, int ms, std::string& why) {
  const int fd = ::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  if (::connect(fd, addr, len) == 0) return fd;
  if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, ms) == 1) {
      int err = 0;
      socklen_t n = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n);
      if (err == 0) return fd;
      why = std::strerror(err);
    } else {
      why = "no answer";
    }
  } else {
    why = std::strerror(errno);
  }
  ::close(fd);
  return -1;
}

}  // namespace xb
