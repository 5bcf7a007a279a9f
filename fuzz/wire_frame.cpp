// payload_length + decode_frame (engine/wire.hpp): the 12-byte bootstrap
// header and its payload, split as recv_frame splits them. Any bytes either
// parse or throw ProtocolError; a frame that parses re-encodes to the same
// bytes and parses back to the same frame.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "common.hpp"
#include "engine/wire.hpp"

using namespace xb::engine;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  // The header is whatever the first 12 bytes are (shorter inputs give a
  // short header, which must be refused, not read past).
  const std::string header = in.substr(0, std::min<std::size_t>(12, in.size()));
  const std::string payload = in.size() > 12 ? in.substr(12) : std::string();
  std::uint32_t len = 0;
  Frame f;
  try {
    len = payload_length(header);
    FUZZ_CHECK(len <= kMaxPayload, "payload_length above kMaxPayload");
    f = decode_frame(header, payload);
  } catch (const ProtocolError&) {
    return 0;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "frame parsing threw something other than ProtocolError", e.what());
  }
  FUZZ_CHECK(header.size() == 12 && f.payload.size() == len && f.payload == payload, "");
  const auto type = static_cast<std::uint16_t>(f.type);
  FUZZ_CHECK(type >= static_cast<std::uint16_t>(MsgType::hello) &&
                 type <= static_cast<std::uint16_t>(MsgType::bye),
             "decoded an unknown message type");
  const std::string again = encode_frame(f);
  FUZZ_CHECK(again == in, "encode_frame(decode_frame(x)) != x");
  const Frame g = decode_frame(again.substr(0, 12), again.substr(12));
  FUZZ_CHECK(g.type == f.type && g.payload == f.payload, "decode(encode(f)) != f");
  return 0;
}
