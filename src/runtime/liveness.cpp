#include "runtime/liveness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/tcp.hpp"
#include "core/timer.hpp"

namespace xb {

double peer_timeout_from_env() {
  const char* v = std::getenv("XFERBENCH_PEER_TIMEOUT");
  if (!v || !*v) return 30;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || errno != 0 || !std::isfinite(s) || s < 0 || s > 86400)
    throw UsageError(fmt::format(
        "XFERBENCH_PEER_TIMEOUT='{}': want seconds from 0 (no watch) to 86400, at least {:g} "
        "when watching",
        v, kPeerTimeoutFloorS));
  if (s > 0 && s < kPeerTimeoutFloorS)
    throw UsageError(fmt::format(
        "XFERBENCH_PEER_TIMEOUT='{}': at least {:g} s (two heartbeats of {:g} s; a shorter "
        "timeout takes healthy ranks for lost ones), or 0 for no watch",
        v, kPeerTimeoutFloorS, kHeartbeatS));
  return s;
}

// --- the judging ---------------------------------------------------------------

PeerWatch::Peer* PeerWatch::find(int rank) {
  for (auto& p : peers_)
    if (p.rank == rank) return &p;
  return nullptr;
}

void PeerWatch::add(int rank, std::string name, double now) {
  Peer p;
  p.rank = rank;
  p.name = std::move(name);
  p.last = p.changed = now;
  peers_.push_back(std::move(p));
}

bool PeerWatch::has(int rank) const {
  return std::any_of(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.rank == rank; });
}

void PeerWatch::remove(int rank) {
  peers_.erase(
      std::remove_if(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.rank == rank; }),
      peers_.end());
}

void PeerWatch::on_line(int rank, std::string_view line, double now) {
  Peer* p = find(rank);
  if (!p) return;
  p->last = now;
  p->heard = true;
  if (p->state != State::live) return;  // the first word that ends a peer stays
  if (line == "bye") {
    p->state = State::left;
  } else if (line == "bye error") {
    p->state = State::left_error;
  } else if (line.rfind("lost ", 0) == 0) {
    const auto rest = line.substr(5);
    const auto tab = rest.find('\t');
    p->relayed.peer = std::string(rest.substr(0, tab));
    p->relayed.reason = tab == std::string_view::npos ? "lost" : std::string(rest.substr(tab + 1));
    p->relayed.relayed = true;
    p->state = State::relayed;
  } else {
    return;  // "hb", or a word of a later version: the peer is alive
  }
  p->changed = now;
}

void PeerWatch::on_closed(int rank, double now) {
  Peer* p = find(rank);
  if (!p || p->state != State::live) return;
  if (!p->heard) {  // a handshake the peer gave up
    remove(rank);
    return;
  }
  p->state = State::closed;
  p->changed = now;
}

std::optional<PeerWatch::Lost> PeerWatch::check(double now) const {
  for (const auto& p : peers_) {
    switch (p.state) {
      case State::live:
        if (now - p.last > timeout_s_)
          return Lost{p.rank, p.name,
                      fmt::format("nothing came from it for {:.1f} s: its link is down, or it is "
                                  "stopped (XFERBENCH_PEER_TIMEOUT={:g})",
                                  now - p.last, timeout_s_)};
        break;
      case State::closed:
        return Lost{p.rank, p.name,
                    "its connection closed without a goodbye: the process died or was killed"};
      case State::left_error:
        if (now - p.changed > timeout_s_)
          return Lost{p.rank, p.name,
                      fmt::format("it ended with an error {:.0f} s ago and this rank still "
                                  "runs: it waits for a rank that left",
                                  now - p.changed)};
        break;
      case State::relayed:
        return p.relayed;
      case State::left:
        break;
    }
  }
  return std::nullopt;
}

double PeerWatch::heartbeat_s() const { return std::min(kHeartbeatS, timeout_s_ / 4); }

// --- writing without stdio -----------------------------------------------------------

void write_now(std::string_view line) {
  sigset_t pipe;  // a reader that is gone: EPIPE, not death by signal
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  pollfd p{STDERR_FILENO, POLLOUT, 0};
  std::size_t done = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (done < line.size() && std::chrono::steady_clock::now() < until) {
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno != EINTR && errno != EAGAIN) break;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
}

namespace {
std::mutex g_last_mu;
std::function<void(const std::string&)> g_last_words;

void last_words(const std::string& why) {
  std::function<void(const std::string&)> fn;
  {
    std::lock_guard lock(g_last_mu);
    fn = g_last_words;
  }
  if (fn) fn(why);
}
}  // namespace

void set_last_words(std::function<void(const std::string& why)> fn) {
  std::lock_guard lock(g_last_mu);
  g_last_words = std::move(fn);
}

void exit_now(std::string_view line, int code) {
  write_now(line);
  _exit(code);
}

// --- sockets ----------------------------------------------------------------------

namespace {

std::string host_name() {
  char h[256] = {};
  if (gethostname(h, sizeof h - 1) != 0 || !*h) return "?";
  std::string s = h;
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; }, '_');
  return s;
}

// Best effort, never blocks: a peer whose buffer is full gets no heartbeat
// (it is unreachable, or about to be judged so).
void send_line(int fd, std::string_view s) {
  (void)::send(fd, s.data(), s.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// Reads what is there; appends complete lines to `lines`. False when the
// connection closed or failed.
bool read_lines(int fd, std::string& buf, std::vector<std::string>& lines) {
  char tmp[4096];
  bool open = true;
  for (;;) {
    const ssize_t n = ::recv(fd, tmp, sizeof tmp, MSG_DONTWAIT);
    if (n > 0) {
      buf.append(tmp, static_cast<std::size_t>(n));
      if (buf.size() > 1 << 16) return false;  // no line is this long: not a peer
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    open = false;  // closed or failed: the lines before still count (a goodbye)
    break;
  }
  for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n')) {
    lines.push_back(buf.substr(0, nl));
    buf.erase(0, nl + 1);
  }
  return open;
}

std::string peer_address(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  char s[INET_ADDRSTRLEN] = "?";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 && a.sin_family == AF_INET)
    inet_ntop(AF_INET, &a.sin_addr, s, sizeof s);
  return s;
}

// This host's IPv4 addresses that are up, the loopback last (a rank on
// another host must not reach an unrelated listener on its own loopback
// first; the nonce would refuse it, but each try costs time).
std::vector<std::string> local_addresses() {
  std::vector<std::string> out, loop;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return {"127.0.0.1"};
  for (ifaddrs* i = all; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    char s[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, s, sizeof s);
    auto& to = (i->ifa_flags & IFF_LOOPBACK) ? loop : out;
    if (std::find(to.begin(), to.end(), s) == to.end()) to.emplace_back(s);
  }
  freeifaddrs(all);
  out.insert(out.end(), loop.begin(), loop.end());
  return out;
}

// A TCP connection to addr:port within 2 s (no Nagle: lines go out at
// once), or -1 with `why`.
int dial(const std::string& addr, int port, std::string& why) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, addr.c_str(), &a.sin_addr) != 1) {
    why = fmt::format("{}: not an IPv4 address", addr);
    return -1;
  }
  const int fd = tcp_connect(reinterpret_cast<sockaddr*>(&a), sizeof a, 2000, why);
  if (fd < 0) {
    why = fmt::format("{}:{}: {}", addr, port, why);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Waits up to `ms` for one line on fd; what came after it stays in `buf`.
bool read_line(int fd, std::string& buf, std::string& line, int ms) {
  std::vector<std::string> lines;
  const double until = now_s() + ms / 1e3;
  while (lines.empty()) {
    const double left = until - now_s();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left * 1e3) + 1) < 0 && errno != EINTR) return false;
    if (!read_lines(fd, buf, lines)) return false;
  }
  line = lines.front();
  for (std::size_t i = lines.size(); i-- > 1;) buf.insert(0, lines[i] + "\n");
  return true;
}

// Ends our side cleanly: the peer reads everything sent before end-of-stream
// (a close with unread data would send a reset, which may destroy it in
// flight). Drains what came, waiting for the peer's own end until `until`.
void close_after(int fd, double until) {
  ::shutdown(fd, SHUT_WR);
  char tmp[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, tmp, sizeof tmp, MSG_DONTWAIT);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) break;
    const double left = until - now_s();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left * 1e3) + 1);
  }
  ::close(fd);
}

}  // namespace

struct Liveness::Impl {
  struct Conn {
    int fd = -1;
    int rank = -1;  // -1 until its hello (hub side); kReplaced: the rank came again
    double opened = 0;
    std::string buf;
  };
  static constexpr int kReplaced = -2;
  static constexpr std::size_t kMaxPending = 64;  // connections without a hello yet

  int rank, size;
  PeerWatch watch;
  std::string host = host_name();
  std::string nonce;
  int listen_fd = -1;
  std::vector<Conn> conns;
  std::thread thread;
  std::atomic<bool> stop{false};
  bool left = false;
  double started = 0, accept_paused_until = 0;
  std::set<int> joined;
  bool warned = false;

  Impl(int r, int n, double t) : rank(r), size(n), watch(t) {}

  void run() {
    double next_beat = 0;
    while (!stop.load()) {
      std::vector<pollfd> fds;
      const bool accepting = listen_fd >= 0 && now_s() >= accept_paused_until;
      if (accepting) fds.push_back({listen_fd, POLLIN, 0});
      for (const auto& c : conns) fds.push_back({c.fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), 100);
      const double now = now_s();
      if (accepting && (fds[0].revents & POLLIN)) take_connections(now);
      serve(now);
      if (listen_fd >= 0 && !warned && now - started > watch.timeout_s()) warn_missing();
      if (now >= next_beat) {
        for (const auto& c : conns)
          if (c.rank >= 0) send_line(c.fd, "hb\n");
        next_beat = now + watch.heartbeat_s();
      }
      if (auto lost = watch.check(now)) end_run(*lost);
    }
  }

  void take_connections(double now) {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          accept_paused_until = now + 1;  // out of descriptors: do not spin on the listener
        return;
      }
      const auto pending =
          std::count_if(conns.begin(), conns.end(), [](const Conn& c) { return c.rank < 0; });
      if (static_cast<std::size_t>(pending) >= kMaxPending) {  // a flood, not our ranks
        ::close(fd);
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      conns.push_back({fd, -1, now, {}});
    }
  }

  // Reads every connection; hands lines to the watch; answers hellos.
  void serve(double now) {
    for (std::size_t i = 0; i < conns.size();) {
      Conn& c = conns[i];
      std::vector<std::string> lines;
      bool drop = c.rank == kReplaced || !read_lines(c.fd, c.buf, lines);
      for (const auto& l : lines) {
        if (c.rank == kReplaced) break;
        if (c.rank < 0) {
          if (!hello(c, l, now)) {
            drop = true;
            break;
          }
        } else {
          watch.on_line(c.rank, l, now);
        }
      }
      if (c.rank == -1 && now - c.opened > 5) drop = true;  // no hello: not one of ours
      if (drop) {
        if (c.rank >= 0) watch.on_closed(c.rank, now);
        ::close(c.fd);
        conns.erase(conns.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }

  // "hello RANK HOST NONCE": a rank of this run joins. A rank that comes
  // again gave up its first try: that connection is dropped unjudged.
  bool hello(Conn& c, const std::string& line, double now) {
    std::istringstream in(line);
    std::string word, h, n;
    int r = -1;
    if (!(in >> word >> r >> h >> n) || word != "hello" || n != nonce || r <= 0 || r >= size)
      return false;
    if (watch.has(r)) {
      for (auto& old : conns)
        if (old.rank == r) old.rank = kReplaced;
      watch.remove(r);
    }
    joined.insert(r);
    c.rank = r;
    watch.add(r, fmt::format("rank {} ({}, {})", r, h, peer_address(c.fd)), now);
    send_line(c.fd, "welcome\n");
    return true;
  }

  void warn_missing() {
    warned = true;
    std::string missing;
    for (int r = 1; r < size; ++r)
      if (!joined.count(r)) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    if (!missing.empty())
      write_now(
          fmt::format("xferbench: warning: rank(s) {} did not join the liveness watch within "
                      "{:g} s: should they fail, rank 0 will not notice\n",
                      missing, watch.timeout_s()));
  }

  // A peer is lost: the hub tells the others first (and waits up to a
  // second for them to read it), then this rank ends.
  // This rank's file is marked first: once the others hear of the loss and
  // exit, the launcher may kill this process at any moment (MPICH's does,
  // even with -disable-auto-cleanup).
  [[noreturn]] void end_run(const PeerWatch::Lost& lost) {
    const std::string why = fmt::format("rank {} lost {}{}: {}", rank, lost.peer,
                                        lost.relayed ? " (seen by rank 0)" : "", lost.reason);
    last_words(why);
    write_now("xferbench: error: " + why + "\n");
    if (rank == 0 && !lost.relayed) {
      const std::string relay = fmt::format("lost {}\t{}\n", lost.peer, lost.reason);
      for (const auto& c : conns)
        if (c.rank >= 0 && c.rank != lost.rank) send_line(c.fd, relay);
      const double until = now_s() + 1;
      for (const auto& c : conns)
        if (c.rank >= 0 && c.rank != lost.rank) close_after(c.fd, until);
    }
    _exit(1);
  }
};

Liveness::Liveness(int rank, int size, double timeout_s)
    : impl_(std::make_unique<Impl>(rank, size, timeout_s)) {}

Liveness::~Liveness() { leave(true); }

std::string Liveness::listen() {
  auto& m = *impl_;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  std::string why;
  const int fd = tcp_listen(reinterpret_cast<sockaddr*>(&a), sizeof a, 1024, why);
  if (fd < 0) throw RuntimeError(fmt::format("liveness socket: {}", why));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);  // the watch's loop accepts what is there
  m.listen_fd = fd;
  std::random_device rd;
  m.nonce = fmt::format("{:08x}{:08x}", rd(), rd());
  std::string addrs;
  for (const auto& s : local_addresses()) addrs += (addrs.empty() ? "" : ",") + s;
  m.started = now_s();
  m.thread = std::thread([&m] { m.run(); });
  return fmt::format("{} {} {:g} {} {}", tcp_bound_port(fd), m.nonce, m.watch.timeout_s(), m.host,
                     addrs);
}

std::string Liveness::connect(const std::string& contact) {
  auto& m = *impl_;
  std::istringstream in(contact);
  int port = 0;
  double timeout = 0;
  std::string hub_host, addrs;
  if (!(in >> port >> m.nonce >> timeout >> hub_host >> addrs) || !(timeout > 0))
    return "malformed contact '" + contact + "'";
  m.watch.set_timeout(timeout);
  std::string why;
  std::istringstream list(addrs);
  for (std::string addr; std::getline(list, addr, ',');) {
    const int fd = dial(addr, port, why);
    if (fd < 0) continue;
    send_line(fd, fmt::format("hello {} {} {}\n", m.rank, m.host, m.nonce));
    std::string buf, line;
    if (!read_line(fd, buf, line, 5000) || line != "welcome") {
      why = fmt::format("{}:{}: no welcome from rank 0", addr, port);
      ::close(fd);
      continue;
    }
    send_line(fd, "hb\n");  // at once: the hub tells a joined rank from a handshake given up
    m.conns.push_back({fd, 0, now_s(), buf});
    m.watch.add(0, fmt::format("rank 0 ({}, {})", hub_host, addr), now_s());
    m.thread = std::thread([&m] { m.run(); });
    return {};
  }
  return fmt::format("cannot reach rank 0 ({}) at any of {} port {}: {}", hub_host, addrs, port,
                     why);
}

void Liveness::leave(bool error) {
  auto& m = *impl_;
  if (m.left) return;
  m.left = true;
  m.stop = true;
  if (m.thread.joinable()) m.thread.join();
  for (const auto& c : m.conns) {
    if (c.rank >= 0) send_line(c.fd, error ? "bye error\n" : "bye\n");
    close_after(c.fd, 0);
  }
  m.conns.clear();
  if (m.listen_fd >= 0) ::close(m.listen_fd);
  m.listen_fd = -1;
}

}  // namespace xb
