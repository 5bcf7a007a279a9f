// The ranks' liveness watch: the judging as a pure function of lines and
// times, then the real sockets with the watching side in a child process
// (it ends its process when a peer is lost) and raw sockets as the peers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "runtime/liveness.hpp"

namespace xb {
namespace {

TEST(PeerWatch, HeartbeatsKeepAPeerAlive) {
  PeerWatch w(5);
  w.add(1, "rank 1 (a, 10.0.0.2)", 0);
  for (double t = 0.5; t < 100; t += 0.5) {
    w.on_line(1, "hb", t);
    ASSERT_FALSE(w.check(t)) << t;
  }
}

TEST(PeerWatch, SilenceLongerThanTheTimeoutLosesThePeer) {
  PeerWatch w(5);
  w.add(1, "rank 1 (a, 10.0.0.2)", 0);
  w.add(2, "rank 2 (b, 10.0.0.3)", 0);
  w.on_line(1, "hb", 3);
  w.on_line(2, "hb", 1);
  EXPECT_FALSE(w.check(5.9));
  const auto lost = w.check(6.5);  // rank 2 silent 5.5 s, rank 1 3.5 s
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->rank, 2);
  EXPECT_EQ(lost->peer, "rank 2 (b, 10.0.0.3)");
  EXPECT_NE(lost->reason.find("nothing came from it for 5.5 s"), std::string::npos) << lost->reason;
  EXPECT_NE(lost->reason.find("XFERBENCH_PEER_TIMEOUT=5"), std::string::npos) << lost->reason;
  EXPECT_FALSE(lost->relayed);
}

TEST(PeerWatch, ClosedWithoutGoodbyeIsLostAtOnce) {
  PeerWatch w(30);
  w.add(1, "rank 1", 0);
  w.on_line(1, "hb", 1);
  w.on_closed(1, 2);
  const auto lost = w.check(2);
  ASSERT_TRUE(lost);
  EXPECT_NE(lost->reason.find("closed without a goodbye"), std::string::npos);
}

TEST(PeerWatch, ClosedBeforeItsFirstLineIsAHandshakeGivenUp) {
  PeerWatch w(30);
  w.add(1, "rank 1", 0);
  w.on_closed(1, 0.5);  // it did not get the welcome in time and tries again
  EXPECT_FALSE(w.check(0.5));
  EXPECT_FALSE(w.has(1));
  w.add(1, "rank 1", 1);  // its second try
  EXPECT_TRUE(w.has(1));
  w.on_line(1, "hb", 1.1);
  w.on_closed(1, 2);
  EXPECT_TRUE(w.check(2));
}

TEST(PeerWatch, GoodbyeThenCloseIsNeverLost) {
  PeerWatch w(1);
  w.add(1, "rank 1", 0);
  w.on_line(1, "bye", 0.5);
  w.on_closed(1, 0.6);
  EXPECT_FALSE(w.check(1000));
}

TEST(PeerWatch, LeavingWithAnErrorIsLostOnlyATimeoutLater) {
  PeerWatch w(10);
  w.add(1, "rank 1", 0);
  w.on_line(1, "bye error", 2);
  w.on_closed(1, 2.1);  // the close after the word does not count as a death
  EXPECT_FALSE(w.check(11.9));
  const auto lost = w.check(12.5);
  ASSERT_TRUE(lost);
  EXPECT_NE(lost->reason.find("ended with an error 10 s ago"), std::string::npos) << lost->reason;
}

TEST(PeerWatch, TheHubsRelayNamesTheLostRank) {
  PeerWatch w(10);
  w.add(0, "rank 0 (hub, 10.0.0.1)", 0);
  w.on_line(0, "lost rank 2 (c, 10.0.0.3)\tits connection closed", 1);
  const auto lost = w.check(1);
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->peer, "rank 2 (c, 10.0.0.3)");
  EXPECT_EQ(lost->reason, "its connection closed");
  EXPECT_TRUE(lost->relayed);
}

TEST(PeerWatch, UnknownWordsAndUnknownRanksChangeNothing) {
  PeerWatch w(2);
  w.add(1, "rank 1", 0);
  w.on_line(1, "a word of a later version", 1.5);
  w.on_line(7, "bye", 1.5);
  w.on_closed(7, 1.5);
  EXPECT_FALSE(w.check(3));  // heard at 1.5
  EXPECT_TRUE(w.check(3.6));
}

TEST(PeerWatch, HeartbeatIsAQuarterOfShortTimeouts) {
  EXPECT_DOUBLE_EQ(PeerWatch(30).heartbeat_s(), 0.5);
  EXPECT_DOUBLE_EQ(PeerWatch(1).heartbeat_s(), 0.25);
}

TEST(PeerTimeout, ReadFromTheEnvironment) {
  const auto with = [](const char* v) {
    if (v)
      setenv("XFERBENCH_PEER_TIMEOUT", v, 1);
    else
      unsetenv("XFERBENCH_PEER_TIMEOUT");
    return peer_timeout_from_env();
  };
  EXPECT_EQ(with(nullptr), 30);
  EXPECT_EQ(with(""), 30);
  EXPECT_EQ(with("0"), 0);
  EXPECT_EQ(with("2.5"), 2.5);
  EXPECT_EQ(with("1"), kPeerTimeoutFloorS);
  for (const char* bad : {"abc", "-1", "5x", "nan", "inf", "1e9", "0.01", "0.5", "0.99"})
    EXPECT_THROW(with(bad), UsageError) << bad;
  unsetenv("XFERBENCH_PEER_TIMEOUT");
}

// --- real sockets ------------------------------------------------------------------

// Runs `fn` in a child process; returns its exit status and what it wrote to
// stderr (fn's own result line goes to `out`, a pipe the parent reads).
struct Child {
  pid_t pid = -1;
  int err = -1;  // the child's stderr
  int out = -1;  // what fn writes to its fd argument
  int wait_status(std::string& stderr_text) {
    int st = 0;
    waitpid(pid, &st, 0);
    char buf[4096];
    for (ssize_t n; (n = read(err, buf, sizeof buf)) > 0;)
      stderr_text.append(buf, static_cast<std::size_t>(n));
    close(err);
    close(out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
};

Child fork_child(const std::function<void(int out_fd)>& fn) {
  int e[2], o[2];
  EXPECT_EQ(pipe(e), 0);
  EXPECT_EQ(pipe(o), 0);
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(e[1], STDERR_FILENO);
    close(e[0]);
    close(o[0]);
    fn(o[1]);
    _exit(0);
  }
  close(e[1]);
  close(o[1]);
  c.err = e[0];
  c.out = o[0];
  return c;
}

std::string read_line_from(int fd, int ms = 5000) {
  std::string s;
  char ch;
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, ms) == 1 && read(fd, &ch, 1) == 1 && ch != '\n') s += ch;
  return s;
}

void write_all(int fd, const std::string& s) {  // a closed peer: EPIPE, not SIGPIPE
  ASSERT_EQ(send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

// A raw peer: connects to the hub's contact ("PORT NONCE HOST ADDRS") over
// the loopback and says hello as `rank`, with `nonce` (the contact's if empty).
int raw_peer(const std::string& contact, int rank, std::string nonce = {}) {
  std::istringstream in(contact);
  int port = 0;
  std::string n;
  in >> port >> n;
  if (nonce.empty()) nonce = n;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;  // as the ranks' sockets: a small line goes out at once
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string hello = "hello " + std::to_string(rank) + " peerhost " + nonce + "\n";
  EXPECT_EQ(send(fd, hello.data(), hello.size(), MSG_NOSIGNAL), static_cast<ssize_t>(hello.size()));
  return fd;
}

// The hub in a child: listens, sends its contact up the pipe, then waits.
// Leaves as a rank does: the goodbye, end of stream, then what the hub sent
// is read, so the close is not a reset (which could destroy the goodbye).
void say_bye(int fd) {
  write_all(fd, "bye\n");
  shutdown(fd, SHUT_WR);
  char buf[256];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 2000) == 1 && read(fd, buf, sizeof buf) > 0) {
  }
  close(fd);
}

// A raw peer that joined as a rank does: the welcome, then its first heartbeat.
int join(const std::string& contact, int rank) {
  const int fd = raw_peer(contact, rank);
  EXPECT_EQ(read_line_from(fd), "welcome");
  write_all(fd, "hb\n");
  return fd;
}

// The hub of a run of 8 ranks in a child: listens, sends its contact up the pipe, then waits.
Child hub_child(double timeout_s, double live_s) {
  return fork_child([=](int out) {
    Liveness hub(0, 8, timeout_s);
    const std::string contact = hub.listen() + "\n";
    if (write(out, contact.data(), contact.size()) < 0) _exit(3);
    std::this_thread::sleep_for(std::chrono::duration<double>(live_s));
    hub.leave(false);
  });
}

TEST(Liveness, AKilledPeerEndsTheHubAndTheHubTellsTheOthers) {
  Child hub = hub_child(30, 20);
  const std::string contact = read_line_from(hub.out);
  ASSERT_FALSE(contact.empty());
  const int one = join(contact, 1), two = join(contact, 2);
  const auto t0 = std::chrono::steady_clock::now();
  close(two);  // rank 2 dies: no goodbye
  std::string relay;
  do relay = read_line_from(one);  // heartbeats first, then the relay
  while (relay == "hb");
  EXPECT_EQ(relay.rfind("lost rank 2 (peerhost, 127.0.0.1)\t", 0), 0u) << relay;
  std::string err;
  EXPECT_EQ(hub.wait_status(err), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(err.find("xferbench: error: rank 0 lost rank 2 (peerhost, 127.0.0.1): its connection "
                     "closed without a goodbye"),
            std::string::npos)
      << err;
  close(one);
}

TEST(Liveness, ASilentPeerEndsTheHubAfterTheTimeout) {
  Child hub = hub_child(1, 20);
  const std::string contact = read_line_from(hub.out);
  const auto t0 = std::chrono::steady_clock::now();
  const int one = join(contact, 1);
  std::string err;  // rank 1 says nothing more (its link is down)
  EXPECT_EQ(hub.wait_status(err), 1);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(took, 0.5);
  EXPECT_LT(took, 5);
  EXPECT_NE(err.find("rank 0 lost rank 1 (peerhost, 127.0.0.1): nothing came from it for"),
            std::string::npos)
      << err;
  close(one);
}

TEST(Liveness, GoodbyesRetriesAndStrangersDoNotEndTheRun) {
  Child hub = hub_child(2, 5);
  const std::string contact = read_line_from(hub.out);
  say_bye(join(contact, 1));
  const int gave_up = raw_peer(contact, 2);  // a handshake given up: closed before its first line
  EXPECT_EQ(read_line_from(gave_up), "welcome");
  close(gave_up);
  say_bye(join(contact, 2));                                      // its second try
  const int stranger = raw_peer(contact, 3, "0000000000000000");  // another run's nonce
  EXPECT_EQ(read_line_from(stranger, 2000), "");                  // no welcome: the hub closed it
  close(stranger);
  const int beyond = raw_peer(contact, 8);  // a run of 8 ranks has no rank 8
  EXPECT_EQ(read_line_from(beyond, 2000), "");
  close(beyond);
  std::string err;
  EXPECT_EQ(hub.wait_status(err), 0) << err;  // lived its 5 s past a 2 s timeout
  // Ranks 3-7 never joined: named once the timeout passed, as a warning.
  EXPECT_NE(err.find("warning: rank(s) 3, 4, 5, 6, 7 did not join the liveness watch within 2 s"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("error"), std::string::npos) << err;
}

TEST(Liveness, ARankNamesTheLossTheHubRelays) {
  // The test is the hub: it listens, the child connects as rank 1.
  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(lfd, 4), 0);
  ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  // An unused port first: the rank must try the next address.
  const std::string contact =
      std::to_string(ntohs(a.sin_port)) + " 0123456789abcdef 30 hubhost 192.0.2.254,127.0.0.1";
  Child rank1 = fork_child([&](int out) {
    Liveness me(1, 3, 0);
    const std::string why = me.connect(contact);
    const std::string said = (why.empty() ? std::string("ok") : why) + "\n";
    if (write(out, said.data(), said.size()) < 0) _exit(3);
    std::this_thread::sleep_for(std::chrono::seconds(20));
  });
  pollfd p{lfd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1) << "rank 1 never connected";
  const int fd = accept(lfd, nullptr, nullptr);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(
      read_line_from(fd), "hello 1 " + [] {
        char h[256] = {};
        gethostname(h, sizeof h - 1);
        return std::string(h);
      }() + " 0123456789abcdef");
  write_all(fd, "welcome\n");
  EXPECT_EQ(read_line_from(rank1.out), "ok");  // connect() said nothing went wrong
  EXPECT_EQ(read_line_from(fd), "hb");         // its first heartbeat at once
  write_all(fd, "lost rank 2 (c, 10.0.0.3)\tits connection closed without a goodbye\n");
  std::string err;
  EXPECT_EQ(rank1.wait_status(err), 1);
  EXPECT_NE(err.find("xferbench: error: rank 1 lost rank 2 (c, 10.0.0.3) (seen by rank 0): its "
                     "connection closed without a goodbye"),
            std::string::npos)
      << err;
  close(fd);
  close(lfd);
}

TEST(Liveness, NoHubToReachIsSaidNotThrown) {
  Liveness me(1, 3, 0);
  const std::string why = me.connect("1 0123456789abcdef 30 hubhost 127.0.0.1");
  EXPECT_NE(why.find("cannot reach rank 0 (hubhost) at any of 127.0.0.1 port 1"), std::string::npos)
      << why;
  EXPECT_NE(me.connect("garbage").find("malformed contact"), std::string::npos);
  EXPECT_NE(me.connect("1 0123456789abcdef 0 hubhost 127.0.0.1").find("malformed contact"),
            std::string::npos);  // no timeout: not a hub's contact
}

}  // namespace
}  // namespace xb
