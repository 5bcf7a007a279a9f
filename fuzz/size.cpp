// parse_size (core/units.hpp): every -s/-b/-e/-i/--size/--block-bytes value.
// Any text either gives a size > 0 or throws UsageError; a size that parses
// prints (format_size) to text that parses back to the same size.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "common.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  xb::Bytes n = 0;
  try {
    n = xb::parse_size(in, "-s size");
  } catch (const xb::UsageError& e) {
    FUZZ_CHECK(
        std::string(e.what()).find('\n') == std::string::npos || in.find('\n') != std::string::npos,
        "a usage error of more than one line");
    return 0;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "parse_size threw something other than UsageError", e.what());
  }
  FUZZ_CHECK(n > 0, in);
  // "4 KiB" -> "4KiB": format_size's output, without its space, is valid input.
  std::string text = xb::format_size(n);
  text.erase(text.find(' '), 1);
  try {
    FUZZ_CHECK(xb::parse_size(text) == n, text);
  } catch (const xb::UsageError& e) {
    FUZZ_CHECK(false && "format_size wrote what parse_size refuses", text);
  }
  (void)xb::format_capacity(n);
  (void)xb::gbps(n, 1.0);
  return 0;
}
