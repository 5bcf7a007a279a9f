#pragma once
// TCP sockets as the engine's bootstrap and the ranks' liveness watch open
// them: close-on-exec, a connect with a deadline. Callers resolve names.
#include <sys/socket.h>

#include <string>

namespace xb {

// A listening socket on `addr` (port 0: any free one, tcp_bound_port says
// which), close-on-exec, SO_REUSEADDR; -1 with the system's reason in `why`.
int tcp_listen(const sockaddr* addr, socklen_t len, int backlog, std::string& why);
// Whether `host` (a name or an address) resolves here.
bool tcp_resolves(const std::string& host);
// The port a socket is bound to (IPv4 or IPv6).
int tcp_bound_port(int fd);
// One connect to `addr` within `ms`: the socket (non-blocking,
// close-on-exec), or -1 with why ("no answer", or the system's reason).
int tcp_connect(const sockaddr* addr, socklen_t len, int ms, std::string& why);

}  // namespace xb
