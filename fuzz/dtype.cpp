// parse_dtypes / parse_redops (coll/dtype.hpp): coll's and gemm-ar's
// --dtype/--op lists. Any text either gives a non-empty list or throws
// UsageError; each item is there once; the names of a parsed list, joined
// by commas, parse back to the same list.
//
// Input: byte 0 even -> parse_dtypes, odd -> parse_redops; the rest is the list.
#include "coll/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "common.hpp"
#include "core/error.hpp"

namespace {

template <class T, class Parse>
void check(const std::string& list, Parse parse) {
  std::vector<T> got;
  try {
    got = parse(list);
  } catch (const xb::UsageError&) {
    return;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "the list parser threw something other than UsageError", e.what());
  }
  FUZZ_CHECK(!got.empty(), list);
  for (std::size_t i = 0; i < got.size(); ++i)
    for (std::size_t k = 0; k < i; ++k) FUZZ_CHECK(!(got[i] == got[k]), "an item twice in a list");
  std::string again;
  for (T t : got) again += (again.empty() ? "" : ",") + std::string(xb::to_string(t));
  try {
    FUZZ_CHECK(parse(again) == got, again);
  } catch (const xb::UsageError&) {
    FUZZ_CHECK(false && "the names of a parsed list do not parse", again);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string list(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    check<xb::DType>(list, xb::parse_dtypes);
  } else {
    check<xb::RedOp>(list, xb::parse_redops);
  }
  return 0;
}
