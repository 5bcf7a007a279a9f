#pragma once
// Test seams: faults a test asks for by name, to show a path that only a
// sick machine takes. XFERBENCH_TEST_STALL is a comma list of the waits to
// stall ("census": fleet's census never finishes; "copy", "nccl": the cuda
// backend queues a kernel that spins for ten minutes before the copy or
// the collective). Unset in every real run; docs/DESIGN.md lists them.
#include <cstdlib>
#include <string_view>

namespace xb {

inline bool test_stall(std::string_view where) {
  const char* v = std::getenv("XFERBENCH_TEST_STALL");
  if (!v) return false;
  std::string_view list(v);
  while (!list.empty()) {
    const auto comma = list.find(',');
    if (list.substr(0, comma) == where) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace xb
