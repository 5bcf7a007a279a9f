// The option values every family parses from the command line
// (family/parse.hpp): option_set / option_list (--op, --checks, --connect,
// --nic ...), parse_count_list / parse_index_list (--blocks, --threads,
// --device) and parse_duration. Any text either gives what the option takes
// or throws UsageError: a list is non-empty, none empty, a set each item
// once, a count in 1..max, an index >= 0, a duration finite and > 0.
//
// Input: byte 0 picks the parser; the rest is the option's text.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "common.hpp"
#include "core/error.hpp"
#include "family/parse.hpp"

namespace {

template <class T>
void unique_items(const std::vector<T>& v, const std::string& text) {
  FUZZ_CHECK(!v.empty(), text);
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t k = 0; k < i; ++k) FUZZ_CHECK(!(v[i] == v[k]), "an item twice: " + text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0: {
        const auto items = xb::option_set("--op", text, "get,put");
        unique_items(items, text);
        FUZZ_CHECK(xb::each_once(xb::option_list("--op", text, "get,put")) == items, text);
        for (const auto& i : items)
          FUZZ_CHECK(!i.empty() && i.find(',') == std::string::npos, text);
        break;
      }
      case 1: {
        const auto counts = xb::parse_count_list("--blocks", text, 100000, "4,8");
        FUZZ_CHECK(!counts.empty(), text);
        for (const int c : counts) FUZZ_CHECK(c >= 1 && c <= 100000, text);
        break;
      }
      case 2: {
        const auto idx = xb::parse_index_list("--device", text, "0,1");
        FUZZ_CHECK(!idx.empty(), text);
        for (const int i : idx) FUZZ_CHECK(i >= 0, text);
        break;
      }
      default: {
        const double s = xb::parse_duration(text);
        FUZZ_CHECK(std::isfinite(s) && s > 0, text);
      }
    }
  } catch (const xb::UsageError&) {
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "an option parser threw something other than UsageError", e.what());
  }
  return 0;
}
