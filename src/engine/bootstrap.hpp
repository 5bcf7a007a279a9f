#pragma once
// The TCP side of the engine: a server that exports one registered region,
// split into a slot per client, and the client's link to it. Messages are
// framed and versioned (wire.hpp) and carry a shared token.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "core/units.hpp"
#include "engine/wire.hpp"

namespace xb::engine {

// Pattern seeds: the server's region holds kServerSeed at its absolute
// offsets; a client writes kClientSeed at offsets relative to its slot.
inline constexpr std::uint64_t kServerSeed = 0x5E4E4ULL;
inline constexpr std::uint64_t kClientSeed = 0xC11E47ULL;

// Token from --token-file (if it exists) or XFERBENCH_TOKEN; "" if neither.
// A file that exists must hold one: UsageError for an empty one or one that
// is not a line of at most kMaxToken printable characters.
inline constexpr std::size_t kMaxToken = 4096;
std::string load_token(const std::string& file);
std::string make_token();  // 32 random hex digits
// Writes the token readable by the owner only.
void write_token(const std::string& file, const std::string& token);

// "127.0.0.1:20000" -> host, port. Throws UsageError.
std::pair<std::string, int> parse_endpoint(const std::string& text, const char* what);

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 20000;  // 0: any free port
  Bytes size = 1ULL << 30;
  // The region: UCX-allocated host memory when `memory` is null, else these
  // `size` bytes (from a backend: NUMA-bound or device memory), registered
  // as they are; the server fills and checks them through this pointer, so
  // they must be host-addressable. `kind` is what clients ask for ("host"
  // or "device"); `kind_note` says what it is ("device: NUMA node 1").
  std::byte* memory = nullptr;
  std::string kind = "host";
  std::string kind_note = "host memory";
  // Memory the server cannot touch or UCX cannot register (GPU memory):
  // `registrable` false keeps it away from UCX; `ipc` (a device IPC handle
  // of the whole region) goes to every client; `fill(offset, length)`
  // writes the server's pattern there (pattern offset = region offset) and
  // `check(offset, length, seed, pattern_offset)` returns the first wrong
  // byte (or -1), instead of host access.
  bool registrable = true;
  std::string ipc;
  std::function<void(std::uint64_t, std::uint64_t)> fill;
  std::function<std::int64_t(std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t)> check;
  int clients = 1;
  double accept_wait_s = 60;
  double io_timeout_s = 10;
  std::string token;
  std::function<void(const std::string&)> log;  // one line per event
  std::function<void(int port)> on_listening;   // after bind, with the real port
};

struct ServerSummary {
  int served = 0;    // said goodbye
  int failed = 0;    // vanished mid-session
  int rejected = 0;  // wrong token, malformed message, server full
};

// This machine's identity for "same node" (the kernel's boot id), and this
// process's ("<boot id>/<pid>/<nonce>"), as a descriptor's `node` carries it.
std::string node_id();
std::string process_id();
// Whether a descriptor's `node` is this node (IPC works on its node only).
bool on_this_node(const std::string& node);

// Serves until `clients` sessions have ended. Throws UsageError for a bad
// address, RuntimeError when fewer than `clients` connected in time.
ServerSummary serve(const ServerConfig& cfg);

// The client's side of the bootstrap.
class ServerLink {
 public:
  // Connects (retrying until connect_timeout_s), says hello with the token
  // and gets its slot's descriptor. Throws UsageError when unreachable or
  // refused, with the server's reason.
  // `kind`: the region memory this client needs ("host" or "device"), and
  // `need` the bytes of its slot it will use (0: unsaid); a server with the
  // other kind, or a smaller slot, refuses it with the reason. The hello's
  // answer, too, comes within connect_timeout_s.
  ServerLink(const std::string& host, int port, const std::string& token, const std::string& digest,
             const std::string& kind, std::uint64_t need, double connect_timeout_s,
             double io_timeout_s);
  ~ServerLink();
  ServerLink(const ServerLink&) = delete;
  ServerLink& operator=(const ServerLink&) = delete;
  const SegmentDescriptor& segment() const { return segment_; }
  // Asks the server to check [offset, offset+length) of the slot against
  // pattern `seed` (and restore its own pattern there). -1: all right,
  // else the first wrong offset.
  std::int64_t verify(std::uint64_t offset, std::uint64_t length, std::uint64_t seed);
  void bye();
  // Whether the server is still there: its control connection closes when
  // its process ends (killed too), while a region reached through shared
  // memory stays readable after its owner died, so transfers alone cannot
  // tell. A poll() that never waits (about a microsecond), safe from any
  // thread. Empty while connected, else why it is gone.
  std::string gone() const;

 private:
  int fd_ = -1;
  double io_timeout_s_;
  SegmentDescriptor segment_;
};

}  // namespace xb::engine
