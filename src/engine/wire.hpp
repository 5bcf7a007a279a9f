#pragma once
// The engine's wire formats: the segment descriptor a server exports, and
// the framed, versioned messages of the TCP bootstrap. Decoding is bounds-
// checked; anything malformed throws ProtocolError, never reads past input.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace xb::engine {

class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a peer needs to reach registered memory: its UCX worker address, the
// packed remote key, and the range it may touch.
// A region UCX cannot register (GPU memory without a CUDA-enabled UCX)
// has no rkey; clients on the server's node reach it through `ipc` instead.
struct SegmentDescriptor {
  std::string worker_address;  // opaque UCX bytes
  std::string rkey;            // opaque packed rkey; empty: not registered with UCX
  std::uint64_t base = 0;      // remote virtual address of the range
  std::uint64_t length = 0;
  std::uint64_t pattern_offset = 0;  // where the range starts in the server's verification pattern
  std::string ipc{};                 // opaque device IPC handle of the whole region, or empty
  std::uint64_t ipc_size = 0;        // bytes of that region
  std::uint64_t ipc_offset = 0;      // where this range starts in it
  std::string node{};  // the server's "<boot id>/<pid>/<nonce>": IPC works on its node only
};

std::string encode(const SegmentDescriptor& d);
SegmentDescriptor decode_descriptor(const std::string& bytes);

// Appends/reads little-endian integers and length-prefixed strings.
class Writer {
 public:
  Writer& u64(std::uint64_t v);
  Writer& str(const std::string& s);
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  bool at_end() const { return pos_ == in_.size(); }
  std::uint64_t u64();
  std::string str(std::size_t max_len = 1 << 20);
  void done() const;  // throws if bytes are left over

 private:
  const std::string& in_;
  std::size_t pos_ = 0;
};

// Bootstrap frames: "XBEN", version, type, payload length, payload.
// 2: the hello names the region memory the client needs ("host", "device").
inline constexpr std::uint16_t kProtocolVersion = 2;
inline constexpr std::uint32_t kMaxPayload = 1 << 20;

enum class MsgType : std::uint16_t {
  hello = 1,
  accept = 2,
  reject = 3,
  verify = 4,
  verified = 5,
  bye = 6
};

struct Frame {
  MsgType type;
  std::string payload;
};

std::string encode_frame(const Frame& f);
// Parses one frame from a 12-byte header and its payload; throws
// ProtocolError for a bad magic, version, type or an oversized length.
std::uint32_t payload_length(const std::string& header);
Frame decode_frame(const std::string& header, std::string payload);

// The payloads the server reads. hello: the token, a digest of the client's
// run (for the log) and the region kind it needs ("host", "device"), then
// (optional, 0 when absent: a client of an earlier build) the bytes of its
// slot it will use, so that the server refuses a client its slot cannot
// hold before counting it; nothing after them. verify: a range of the client's slot (`slot_len`
// bytes) and the pattern seed to check it against. Throw ProtocolError.
struct Hello {
  std::string token, digest, kind;
  std::uint64_t need = 0;
};
Hello decode_hello(const std::string& payload);
std::string encode_hello(const Hello& h);
struct VerifyRequest {
  std::uint64_t offset = 0, length = 0, seed = 0;
};
VerifyRequest decode_verify(const std::string& payload, std::uint64_t slot_len);
// Token comparison in time independent of where the tokens differ.
bool same_token(const std::string& a, const std::string& b);

// Frames that arrive in pieces (the server's non-blocking reads): feed()
// the bytes as they come, next() returns each whole frame in order; a bad
// header throws ProtocolError as soon as its 12 bytes are in.
class FrameReader {
 public:
  void feed(const char* p, std::size_t n) { buf_.append(p, n); }
  std::optional<Frame> next();
  bool empty() const { return buf_.empty(); }

 private:
  std::string buf_;
};

// Blocking socket I/O with a deadline (seconds); throws ProtocolError on
// EOF, timeout or a malformed frame.
void send_frame(int fd, const Frame& f, double timeout_s);
Frame recv_frame(int fd, double timeout_s);

}  // namespace xb::engine
