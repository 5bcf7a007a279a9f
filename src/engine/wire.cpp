#include "engine/wire.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/timer.hpp"

namespace xb::engine {
namespace {
constexpr char kMagic[4] = {'X', 'B', 'E', 'N'};
constexpr std::size_t kHeader = 12;
}  // namespace

Writer& Writer::u64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  return *this;
}

Writer& Writer::str(const std::string& s) {
  u64(s.size());
  out_ += s;
  return *this;
}

std::uint64_t Reader::u64() {
  if (in_.size() - pos_ < 8) throw ProtocolError("truncated message (integer)");
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
  pos_ += 8;
  return v;
}

std::string Reader::str(std::size_t max_len) {
  const std::uint64_t n = u64();
  if (n > max_len || n > in_.size() - pos_)
    throw ProtocolError(fmt::format("bad string length {}", n));
  std::string s = in_.substr(pos_, n);
  pos_ += n;
  return s;
}

void Reader::done() const {
  if (pos_ != in_.size())
    throw ProtocolError(fmt::format("{} unexpected trailing bytes", in_.size() - pos_));
}

std::string encode(const SegmentDescriptor& d) {
  return Writer()
      .str(d.worker_address)
      .str(d.rkey)
      .u64(d.base)
      .u64(d.length)
      .u64(d.pattern_offset)
      .str(d.ipc)
      .u64(d.ipc_size)
      .u64(d.ipc_offset)
      .str(d.node)
      .take();
}

SegmentDescriptor decode_descriptor(const std::string& bytes) {
  Reader r(bytes);
  SegmentDescriptor d;
  d.worker_address = r.str(64 * 1024);
  d.rkey = r.str(64 * 1024);
  d.base = r.u64();
  d.length = r.u64();
  d.pattern_offset = r.u64();
  d.ipc = r.str(4096);
  d.ipc_size = r.u64();
  d.ipc_offset = r.u64();
  d.node = r.str(256);
  r.done();
  if (d.worker_address.empty() || (d.rkey.empty() && d.ipc.empty()))
    throw ProtocolError("descriptor without address or key");
  if (d.base + d.length < d.base) throw ProtocolError("descriptor range overflows");
  if (!d.ipc.empty() && (d.ipc_offset > d.ipc_size || d.length > d.ipc_size - d.ipc_offset))
    throw ProtocolError("descriptor range outside its IPC region");
  return d;
}

std::string encode_frame(const Frame& f) {
  if (f.payload.size() > kMaxPayload) throw ProtocolError("frame payload too large");
  std::string out(kMagic, 4);
  const auto ver = kProtocolVersion;
  const auto type = static_cast<std::uint16_t>(f.type);
  const auto len = static_cast<std::uint32_t>(f.payload.size());
  out.push_back(static_cast<char>(ver & 0xFF));
  out.push_back(static_cast<char>(ver >> 8));
  out.push_back(static_cast<char>(type & 0xFF));
  out.push_back(static_cast<char>(type >> 8));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(len >> (8 * i)));
  return out + f.payload;
}

std::uint32_t payload_length(const std::string& h) {
  if (h.size() != kHeader || std::memcmp(h.data(), kMagic, 4) != 0)
    throw ProtocolError("not an xferbench engine frame");
  auto byte = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(h[i]));
  };
  const std::uint32_t ver = byte(4) | byte(5) << 8;
  if (ver != kProtocolVersion)
    throw ProtocolError(
        fmt::format("protocol version {} (this build speaks {})", ver, kProtocolVersion));
  const std::uint32_t type = byte(6) | byte(7) << 8;
  if (type < 1 || type > 6) throw ProtocolError(fmt::format("unknown message type {}", type));
  const std::uint32_t len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
  if (len > kMaxPayload)
    throw ProtocolError(fmt::format("oversized message ({} bytes, limit {})", len, kMaxPayload));
  return len;
}

Frame decode_frame(const std::string& header, std::string payload) {
  const std::uint32_t len = payload_length(header);
  if (payload.size() != len) throw ProtocolError("payload length mismatch");
  auto byte = [&](std::size_t i) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(header[i]));
  };
  return {static_cast<MsgType>(byte(6) | byte(7) << 8), std::move(payload)};
}

namespace {

// Waits for `events` on fd until the deadline; throws on timeout.
void wait_fd(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    const double left_ms = -elapsed_us(deadline, Clock::now()) / 1e3;
    if (left_ms <= 0) throw ProtocolError(fmt::format("timed out {}", what));
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(left_ms) + 1);
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR)
      throw ProtocolError(fmt::format("poll: {}", std::strerror(errno)));
  }
}

Clock::time_point deadline_in(double s) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

void read_exact(int fd, char* p, std::size_t n, Clock::time_point deadline) {
  while (n) {
    wait_fd(fd, POLLIN, deadline, "waiting for the peer");
    const ssize_t got = recv(fd, p, n, 0);
    if (got == 0) throw ProtocolError("connection closed by the peer");
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw ProtocolError(fmt::format("recv: {}", std::strerror(errno)));
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
}

}  // namespace

void send_frame(int fd, const Frame& f, double timeout_s) {
  const std::string bytes = encode_frame(f);
  const auto deadline = deadline_in(timeout_s);
  std::size_t off = 0;
  while (off < bytes.size()) {
    wait_fd(fd, POLLOUT, deadline, "sending to the peer");
    const ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw ProtocolError(fmt::format("send: {}", std::strerror(errno)));
    }
    off += static_cast<std::size_t>(n);
  }
}

Frame recv_frame(int fd, double timeout_s) {
  const auto deadline = deadline_in(timeout_s);
  std::string header(kHeader, '\0');
  read_exact(fd, header.data(), kHeader, deadline);
  std::string payload(payload_length(header), '\0');
  read_exact(fd, payload.data(), payload.size(), deadline);
  return decode_frame(header, std::move(payload));
}

std::optional<Frame> FrameReader::next() {
  if (buf_.size() < kHeader) return std::nullopt;
  const std::string header = buf_.substr(0, kHeader);
  const std::uint32_t len = payload_length(header);
  if (buf_.size() - kHeader < len) return std::nullopt;
  Frame f = decode_frame(header, buf_.substr(kHeader, len));
  buf_.erase(0, kHeader + len);
  return f;
}

Hello decode_hello(const std::string& payload) {
  Reader r(payload);
  Hello h;
  h.token = r.str(4096);
  h.digest = r.str(4096);
  h.kind = r.str(64);
  if (!r.at_end()) h.need = r.u64();
  r.done();
  return h;
}

std::string encode_hello(const Hello& h) {
  return Writer().str(h.token).str(h.digest).str(h.kind).u64(h.need).take();
}

VerifyRequest decode_verify(const std::string& payload, std::uint64_t slot_len) {
  Reader r(payload);
  VerifyRequest v;
  v.offset = r.u64();
  v.length = r.u64();
  v.seed = r.u64();
  r.done();
  if (v.offset > slot_len || v.length > slot_len - v.offset)
    throw ProtocolError("verify range outside the slot");
  return v;
}

bool same_token(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    diff |= static_cast<unsigned>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace xb::engine
