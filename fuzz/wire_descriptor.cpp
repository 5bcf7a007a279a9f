// decode_descriptor (engine/wire.hpp): the segment descriptor a client gets
// in the server's accept. Any bytes either decode or throw ProtocolError;
// what decodes re-encodes to the same bytes and decodes to the same value.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "common.hpp"
#include "engine/wire.hpp"

using namespace xb::engine;

namespace {
bool same(const SegmentDescriptor& a, const SegmentDescriptor& b) {
  return a.worker_address == b.worker_address && a.rkey == b.rkey && a.base == b.base &&
         a.length == b.length && a.pattern_offset == b.pattern_offset && a.ipc == b.ipc &&
         a.ipc_size == b.ipc_size && a.ipc_offset == b.ipc_offset && a.node == b.node;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  SegmentDescriptor d;
  try {
    d = decode_descriptor(in);
  } catch (const ProtocolError&) {
    return 0;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "decode_descriptor threw something other than ProtocolError", e.what());
  }
  FUZZ_CHECK(!d.worker_address.empty() && (!d.rkey.empty() || !d.ipc.empty()), "");
  FUZZ_CHECK(d.ipc.empty() || (d.ipc_offset <= d.ipc_size && d.length <= d.ipc_size - d.ipc_offset),
             "accepted a range outside its IPC region");
  FUZZ_CHECK(d.base + d.length >= d.base, "accepted an overflowing range");
  const std::string again = encode(d);
  FUZZ_CHECK(again == in, "encode(decode(x)) != x");
  FUZZ_CHECK(same(decode_descriptor(again), d), "decode(encode(d)) != d");
  return 0;
}
