#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/error.hpp"
#include "engine/bootstrap.hpp"

namespace xb::engine {

std::string load_token(const std::string& file) {
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (in) {
      // A token is one line of printable characters, at most what a hello
      // carries: anything else is the wrong file, not a token to share.
      std::string t(kMaxToken + 2, '\0');
      in.read(t.data(), static_cast<std::streamsize>(t.size()));
      t.resize(static_cast<std::size_t>(in.gcount()));
      while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
      const bool printable =
          std::all_of(t.begin(), t.end(), [](char c) { return c > ' ' && c < 127; });
      if (t.empty())
        throw UsageError(
            fmt::format("token file {} is empty: put the token in it, or remove it "
                        "and the server writes a new one",
                        file));
      if (t.size() > kMaxToken || !printable)
        throw UsageError(
            fmt::format("token file {} does not hold a token (one line of at most {} "
                        "printable characters)",
                        file, kMaxToken));
      return t;
    }
  }
  const char* env = std::getenv("XFERBENCH_TOKEN");
  return env ? env : "";
}

std::string make_token() {
  unsigned char raw[16];
  std::ifstream in("/dev/urandom", std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(raw), sizeof raw))
    throw RuntimeError("cannot read /dev/urandom");
  std::string out;
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

void write_token(const std::string& file, const std::string& token) {
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    throw UsageError(fmt::format("cannot write token file {}: {}", file, std::strerror(errno)));
  const std::string line = token + "\n";
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!ok) throw RuntimeError(fmt::format("writing token file {} failed", file));
}

std::pair<std::string, int> parse_endpoint(const std::string& text, const char* what) {
  const auto colon = text.rfind(':');
  int port = -1;
  if (colon != std::string::npos && colon > 0) {
    const char* b = text.data() + colon + 1;
    const char* e = text.data() + text.size();
    auto [p, ec] = std::from_chars(b, e, port);
    if (ec != std::errc() || p != e) port = -1;
  }
  if (port < 0 || port > 65535)
    throw UsageError(fmt::format("{} '{}' must be HOST:PORT, e.g. 127.0.0.1:20000", what, text));
  return {text.substr(0, colon), port};
}

}  // namespace xb::engine
