// The engine's other outside inputs: parse_endpoint (--listen/--connect
// HOST:PORT) and load_token (the first line of --token-file), both in
// engine/token.cpp. parse_endpoint either gives a port in 0..65535 and the
// text before the last ':' or throws UsageError; load_token either gives a
// token (printable, no blanks, at most kMaxToken characters) or throws
// UsageError (a file that is empty or holds no token).
//
// Input: the endpoint text, then optionally a 0 byte and the token file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include "common.hpp"
#include "core/error.hpp"
#include "engine/bootstrap.hpp"

using namespace xb::engine;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static xb::fuzz::MemFile file;
  static const bool no_env = [] { return unsetenv("XFERBENCH_TOKEN") == 0; }();
  (void)no_env;

  const std::string in(reinterpret_cast<const char*>(data), size);
  const auto nul = in.find('\0');
  const std::string endpoint = in.substr(0, nul);

  try {
    const auto [host, port] = parse_endpoint(endpoint, "--connect");
    FUZZ_CHECK(port >= 0 && port <= 65535, endpoint);
    FUZZ_CHECK(host == endpoint.substr(0, endpoint.rfind(':')), endpoint);
    FUZZ_CHECK(!host.empty(), "accepted an endpoint without a host");
  } catch (const xb::UsageError&) {
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "parse_endpoint threw something other than UsageError", e.what());
  }

  if (nul == std::string::npos) return 0;
  file.write(std::string_view(in).substr(nul + 1));
  try {
    const std::string token = load_token(file.path());
    FUZZ_CHECK(!token.empty() && token.size() <= kMaxToken, "token empty or too long");
    for (const char c : token)
      FUZZ_CHECK(c > ' ' && c < 127, "token holds a blank or a byte that is not printable");
  } catch (const xb::UsageError&) {
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "load_token threw something other than UsageError", e.what());
  }
  return 0;
}
