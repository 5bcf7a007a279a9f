// The engine server: one registered region, a slot per client, a poll loop
// that progresses the UCX worker while it waits for bootstrap messages.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/pattern.hpp"
#include "core/sysinfo.hpp"
#include "core/tcp.hpp"
#include "core/timer.hpp"
#include "engine/bootstrap.hpp"
#include "engine/ucx.hpp"

namespace xb::engine {
namespace {

struct HostMemory {
  explicit HostMemory(Bytes n) : size(n), data(static_cast<std::byte*>(alloc_pages(n))) {
    if (!data) throw RuntimeError(fmt::format("cannot allocate the {} region", format_size(n)));
  }
  ~HostMemory() { std::free(data); }
  Bytes size;
  std::byte* data;
};

int listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
    throw UsageError(fmt::format("--listen: cannot resolve '{}'", host));
  std::string why;
  const int fd = tcp_listen(res->ai_addr, res->ai_addrlen, 64, why);
  freeaddrinfo(res);
  if (fd < 0) throw UsageError(fmt::format("--listen {}:{}: {}", host, port, why));
  return fd;
}

struct Session {
  int fd;
  std::string who;
  int slot = -1;              // -1 until the hello is accepted
  FrameReader in{};           // what arrived of the next frame(s)
  Clock::time_point since{};  // accepted, or the first byte of a partial frame
};

class Server {
 public:
  explicit Server(const ServerConfig& cfg)
      : cfg_(cfg),
        region_(!cfg.registrable ? nullptr
                : cfg.memory     ? std::make_unique<Region>(worker_, cfg.memory, cfg.size)
                                 : std::make_unique<Region>(worker_, cfg.size)),
        data_(region_ ? region_->data() : cfg.memory),
        slot_len_(cfg.size / cfg.clients / 4096 * 4096),
        busy_(static_cast<std::size_t>(cfg.clients), false) {
    if (slot_len_ == 0) throw UsageError("--size is too small for one 4 KiB slot per client");
    if (!region_ && cfg.ipc.empty())
      throw UsageError("a region UCX cannot register needs an IPC handle for its clients");
    if ((cfg.fill == nullptr) != (cfg.check == nullptr))
      throw RuntimeError("the server's fill and check hooks come together");
    restore_bytes(0, cfg.size);
    efd_ = worker_.event_fd();
  }

  ServerSummary run() {
    listen_fd_ = listen_on(cfg_.host, cfg_.port);
    const int port = tcp_bound_port(listen_fd_);
    log(fmt::format("listening on {}:{} · region {} of {} in {} slot{} of {} · UCX {}", cfg_.host,
                    port, format_size(cfg_.size), cfg_.kind_note, cfg_.clients,
                    cfg_.clients == 1 ? "" : "s", format_size(slot_len_), ucx_version()));
    if (cfg_.on_listening) cfg_.on_listening(port);
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(cfg_.accept_wait_s));
    while (sum_.served + sum_.failed < cfg_.clients) {
      if (accepted_ < cfg_.clients && Clock::now() > deadline) {
        close_all();
        throw RuntimeError(fmt::format("only {} of {} clients connected within --accept-wait {} s",
                                       accepted_, cfg_.clients, cfg_.accept_wait_s));
      }
      step();
    }
    close_all();
    log(fmt::format("done: {} served, {} failed, {} rejected", sum_.served, sum_.failed,
                    sum_.rejected));
    return sum_;
  }

 private:
  void log(const std::string& line) const {
    if (cfg_.log) cfg_.log(line);
  }

  // Sleeps in poll() on the sockets and the UCX worker's event fd: UCX
  // traffic that needs the target (TCP) is served as soon as it arrives.
  void step() {
    while (worker_.progress()) {
    }
    const bool armed = worker_.arm();
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}, {efd_, POLLIN, 0}};
    for (const auto& s : sessions_) fds.push_back({s.fd, POLLIN, 0});
    const int rc = poll(fds.data(), fds.size(), armed ? 100 : 0);
    if (rc > 0) {
      if (fds[0].revents & POLLIN) accept_one();
      for (std::size_t i = fds.size() - 1; i >= 2; --i)
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) handle(i - 2);
    }
    expire();
  }

  // A peer that stops halfway through a frame, or never says hello, is
  // dropped after --io-timeout; the others are served meanwhile.
  void expire() {
    const auto limit = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(cfg_.io_timeout_s));
    const auto now = Clock::now();
    for (std::size_t i = sessions_.size(); i-- > 0;) {
      const Session& s = sessions_[i];
      if (!s.in.empty() && now - s.since > limit)
        drop(i, "timed out waiting for the peer (a partial message)", true);
      else if (s.slot < 0 && s.in.empty() && now - s.since > limit)
        drop(i, fmt::format("no hello within {} s", cfg_.io_timeout_s), true);
    }
  }

  void accept_one() {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
    if (fd < 0) return;
    char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
    getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv,
                NI_NUMERICHOST | NI_NUMERICSERV);
    sessions_.push_back({fd, fmt::format("{}:{}", host, serv), -1, {}, Clock::now()});
  }

  void drop(std::size_t i, const std::string& why, bool rejected) {
    Session s = sessions_[i];
    sessions_.erase(sessions_.begin() + static_cast<long>(i));
    close(s.fd);
    if (s.slot >= 0) {
      restore(s.slot, 0, slot_len_);
      busy_[static_cast<std::size_t>(s.slot)] = false;
      ++sum_.failed;
      log(fmt::format("client {} (slot {}) failed: {}", s.who, s.slot, why));
    } else if (rejected) {
      ++sum_.rejected;
      log(fmt::format("rejected {}: {}", s.who, why));
    }
  }

  void restore(int slot, std::uint64_t off, std::uint64_t len) {
    restore_bytes(static_cast<std::uint64_t>(slot) * slot_len_ + off, len);
  }
  void restore_bytes(std::uint64_t base, std::uint64_t len) {
    if (cfg_.fill)
      cfg_.fill(base, len);
    else
      fill_pattern(std::span(data_ + base, len), kServerSeed, base);
  }

  SegmentDescriptor describe(std::uint64_t off) const {
    SegmentDescriptor d;
    if (region_) {
      d = region_->describe(off, slot_len_, off);
    } else {
      d.worker_address = worker_.address();
      d.base = reinterpret_cast<std::uint64_t>(data_) + off;
      d.length = slot_len_;
      d.pattern_offset = off;
    }
    d.ipc = cfg_.ipc;
    d.ipc_size = cfg_.ipc.empty() ? 0 : cfg_.size;
    d.ipc_offset = cfg_.ipc.empty() ? 0 : off;
    d.node = process_id();
    return d;
  }

  void refuse(std::size_t i, const std::string& why) {
    try {
      send_frame(sessions_[i].fd, {MsgType::reject, why}, cfg_.io_timeout_s);
    } catch (const ProtocolError&) {
    }
    drop(i, why, true);
  }

  // Reads what this session's socket has (never waits), then serves every
  // whole frame in it.
  void handle(std::size_t i) {
    char buf[64 * 1024];
    const ssize_t got = recv(sessions_[i].fd, buf, sizeof buf, MSG_DONTWAIT);
    if (got == 0) return drop(i, "connection closed by the peer", true);
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      return drop(i, fmt::format("recv: {}", std::strerror(errno)), true);
    }
    if (sessions_[i].in.empty()) sessions_[i].since = Clock::now();
    sessions_[i].in.feed(buf, static_cast<std::size_t>(got));
    for (;;) {
      std::optional<Frame> f;
      try {
        f = sessions_[i].in.next();
      } catch (const ProtocolError& e) {
        return drop(i, e.what(), true);
      }
      if (!f) return;
      const int fd = sessions_[i].fd;
      const std::size_t before = sessions_.size();
      try {
        dispatch(i, *f);
      } catch (const ProtocolError& e) {
        if (sessions_[i].slot < 0) return refuse(i, e.what());
        return drop(i, e.what(), true);
      }
      if (sessions_.size() != before || sessions_[i].fd != fd) return;  // it said bye
      if (!sessions_[i].in.empty()) sessions_[i].since = Clock::now();
    }
  }

  void dispatch(std::size_t i, const Frame& f) {
    Session& s = sessions_[i];
    if (f.type == MsgType::hello && s.slot < 0) return hello(i, f);
    if (s.slot < 0) throw ProtocolError("expected a hello first");
    if (f.type == MsgType::verify) return verify(s, f);
    if (f.type == MsgType::bye) {
      restore(s.slot, 0, slot_len_);
      busy_[static_cast<std::size_t>(s.slot)] = false;
      ++sum_.served;
      log(fmt::format("client {} (slot {}) done", s.who, s.slot));
      close(s.fd);
      sessions_.erase(sessions_.begin() + static_cast<long>(i));
      return;
    }
    throw ProtocolError("unexpected message");
  }

  void hello(std::size_t i, const Frame& f) {
    const Hello h = decode_hello(f.payload);
    const std::string& digest = h.digest;
    const std::string& kind = h.kind;
    if (!same_token(h.token, cfg_.token)) return refuse(i, "wrong token");
    if (kind != cfg_.kind)
      return refuse(i, fmt::format("this server's region is {} (engine serve --mem {}), the "
                                   "client's mode needs {} memory there",
                                   cfg_.kind_note, cfg_.kind, kind));
    int slot = -1;
    for (std::size_t k = 0; k < busy_.size() && slot < 0; ++k)
      if (!busy_[k]) slot = static_cast<int>(k);
    if (slot < 0) return refuse(i, fmt::format("server full: all {} slots in use", cfg_.clients));
    if (h.need > slot_len_)
      return refuse(i,
                    fmt::format("the client needs {} of its slot, a slot is {} (a region of "
                                "{} for {} client{})",
                                format_size(h.need), format_size(slot_len_), format_size(cfg_.size),
                                cfg_.clients, cfg_.clients == 1 ? "" : "s"));
    busy_[static_cast<std::size_t>(slot)] = true;
    sessions_[i].slot = slot;
    ++accepted_;
    const std::uint64_t off = static_cast<std::uint64_t>(slot) * slot_len_;
    send_frame(sessions_[i].fd, {MsgType::accept, encode(describe(off))}, cfg_.io_timeout_s);
    log(fmt::format("client {} accepted into slot {} ({}) · {}", sessions_[i].who, slot,
                    format_size(slot_len_), digest));
  }

  void verify(Session& s, const Frame& f) {
    const VerifyRequest v = decode_verify(f.payload, slot_len_);
    const std::uint64_t off = v.offset, len = v.length, seed = v.seed;
    const std::uint64_t base = static_cast<std::uint64_t>(s.slot) * slot_len_ + off;
    std::int64_t bad = -1;
    if (cfg_.check) {
      bad = cfg_.check(base, len, seed, off);
    } else if (const auto m =
                   find_mismatch(std::span<const std::byte>(data_ + base, len), seed, off)) {
      bad = static_cast<std::int64_t>(*m);
    }
    restore(s.slot, off, len);
    const std::uint64_t answer = bad >= 0 ? static_cast<std::uint64_t>(bad) : ~0ULL;
    send_frame(s.fd, {MsgType::verified, Writer().u64(answer).take()}, cfg_.io_timeout_s);
  }

  void close_all() {
    for (auto& s : sessions_) close(s.fd);
    sessions_.clear();
    if (listen_fd_ >= 0) close(listen_fd_);
    listen_fd_ = -1;
  }

  const ServerConfig& cfg_;
  Worker worker_;
  std::unique_ptr<Region> region_;  // null: not registered with UCX (IPC only)
  std::byte* data_;
  std::uint64_t slot_len_;
  std::vector<bool> busy_;
  std::vector<Session> sessions_;
  int listen_fd_ = -1;
  int efd_ = -1;
  int accepted_ = 0;
  ServerSummary sum_;
};

}  // namespace

std::string node_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id.empty() ? host_name() : id;
}

// "<boot id>/<pid>/<nonce>": the nonce, drawn once per process, tells this
// process from one with the same pid in another PID namespace (a container
// on the same host), which must not take the in-process shortcut.
std::string process_id() {
  static const std::string id = [] {
    std::random_device rd;
    return fmt::format("{}/{}/{:08x}{:08x}", node_id(), getpid(), rd(), rd());
  }();
  return id;
}

bool on_this_node(const std::string& node) { return node.substr(0, node.find('/')) == node_id(); }

ServerSummary serve(const ServerConfig& cfg) {
  if (cfg.clients < 1) throw UsageError("--clients must be at least 1");
  if (cfg.token.empty()) throw UsageError("the server needs a token");
  // UCX's own allocation of a region larger than RAM falls back to POSIX
  // shared memory and fills /dev/shm (RAM) until the node starves.
  if (!cfg.memory)
    if (std::string why = memory_shortfall("the region", cfg.size, " of host memory"); !why.empty())
      throw UsageError(why);
  Server s(cfg);
  return s.run();
}

}  // namespace xb::engine
