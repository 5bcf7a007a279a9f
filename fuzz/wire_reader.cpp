// Reader (engine/wire.hpp): u64/str/done in any order on any bytes, checked
// against a plain reference reader: same values, same point of failure, and
// a failure is always ProtocolError. Also Writer: what it writes, Reader
// reads back.
//
// Input: byte 0 = number of operations n (mod 16), bytes 1..n = operations,
// the rest = the message. Operation o: o % 3 picks u64 / str / done; for
// str, o / 3 % 6 picks max_len from kMaxLens.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "engine/wire.hpp"

using namespace xb::engine;

namespace {

constexpr std::size_t kMaxLens[] = {0, 1, 8, 4096, 64 * 1024, 1 << 20};

// The reference: what the wire format says, written for clarity.
struct Model {
  const std::string& in;
  std::size_t pos = 0;
  std::optional<std::uint64_t> u64() {
    if (in.size() - pos < 8) return std::nullopt;
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(in[pos + i]);
    pos += 8;
    return v;
  }
  std::optional<std::string> str(std::size_t max_len) {
    const auto n = u64();
    if (!n || *n > max_len || *n > in.size() - pos) return std::nullopt;
    std::string s = in.substr(pos, *n);
    pos += *n;
    return s;
  }
  bool done() const { return pos == in.size(); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t n_ops = std::min<std::size_t>(data[0] % 16, size - 1);
  const std::vector<std::uint8_t> ops(data + 1, data + 1 + n_ops);
  const std::string msg(reinterpret_cast<const char*>(data) + 1 + n_ops, size - 1 - n_ops);

  Reader r(msg);
  Model m{msg};
  Writer w;  // re-encodes what was read
  std::string consumed;
  for (const std::uint8_t op : ops) {
    try {
      switch (op % 3) {
        case 0: {
          const auto want = m.u64();
          bool threw = false;
          std::uint64_t got = 0;
          try {
            got = r.u64();
          } catch (const ProtocolError&) {
            threw = true;
          }
          FUZZ_CHECK(threw == !want, "Reader::u64 and the reference disagree on failure");
          if (threw) return 0;
          FUZZ_CHECK(got == *want, "Reader::u64 value differs from the reference");
          w.u64(got);
          break;
        }
        case 1: {
          const std::size_t max_len = kMaxLens[op / 3 % 6];
          const auto want = m.str(max_len);
          bool threw = false;
          std::string got;
          try {
            got = r.str(max_len);
          } catch (const ProtocolError&) {
            threw = true;
          }
          FUZZ_CHECK(threw == !want, "Reader::str and the reference disagree on failure");
          if (threw) return 0;
          FUZZ_CHECK(got == *want, "Reader::str value differs from the reference");
          FUZZ_CHECK(got.size() <= max_len, "Reader::str above max_len");
          w.str(got);
          break;
        }
        default: {
          bool threw = false;
          try {
            r.done();
          } catch (const ProtocolError&) {
            threw = true;
          }
          FUZZ_CHECK(threw == !m.done(), "Reader::done and the reference disagree");
          break;
        }
      }
    } catch (const std::exception& e) {
      FUZZ_CHECK(false && "Reader threw something other than ProtocolError", e.what());
    }
  }
  // What was read, written again, is the prefix of the message it came from.
  const std::string again = w.take();
  FUZZ_CHECK(again.size() == m.pos && msg.compare(0, m.pos, again) == 0,
             "Writer(Reader(x)) is not the consumed prefix of x");
  return 0;
}
