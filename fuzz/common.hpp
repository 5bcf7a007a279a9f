#pragma once
// Shared by the fuzz targets: a contract check that aborts (so libFuzzer
// records the input), and an in-memory file for parsers that take a path.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace xb::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const char* what,
                              std::string_view detail) {
  std::fprintf(stderr, "%s:%d: fuzz contract broken: %s", file, line, what);
  if (!detail.empty())
    std::fprintf(stderr, " (%.*s)", static_cast<int>(detail.size()), detail.data());
  std::fprintf(stderr, "\n");
  std::abort();
}

// A file with no directory entry: write() replaces its contents, path()
// names it for code that opens a path (std::ifstream). No disk I/O, nothing
// left behind.
class MemFile {
 public:
  MemFile() : fd_(memfd_create("xferbench-fuzz", 0)) {
    if (fd_ < 0) fail(__FILE__, __LINE__, "memfd_create failed", "");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  void write(std::string_view bytes) {
    if (ftruncate(fd_, 0) != 0) fail(__FILE__, __LINE__, "ftruncate failed", "");
    std::size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n =
          pwrite(fd_, bytes.data() + off, bytes.size() - off, static_cast<off_t>(off));
      if (n <= 0) fail(__FILE__, __LINE__, "pwrite failed", "");
      off += static_cast<std::size_t>(n);
    }
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// Open bugs in src/ that a target would otherwise hit within seconds, which
// would hide everything else it could find and fail `make test-fuzz` until
// src/ is fixed. A target skips such inputs (or relaxes that one check) under
// FUZZ_KNOWN_BUG(condition); XFERBENCH_FUZZ_STRICT=1 in the environment turns
// every skip off. Each has its reproducer in fuzz/regressions/<target>/:
// once the bug is fixed, delete the skip and the reproducer guards the fix.
inline bool strict() {
  static const bool on = [] {
    const char* v = std::getenv("XFERBENCH_FUZZ_STRICT");
    return v && std::string_view(v) == "1";
  }();
  return on;
}

}  // namespace xb::fuzz

// True when `cond` holds and known bugs are skipped (not strict).
#define FUZZ_KNOWN_BUG(cond) (!::xb::fuzz::strict() && (cond))

// Aborts with the condition's text when a parser breaks its contract.
#define FUZZ_CHECK(cond, detail)                                      \
  do {                                                                \
    if (!(cond)) ::xb::fuzz::fail(__FILE__, __LINE__, #cond, detail); \
  } while (0)
