#pragma once
// The copy benchmark's plan: which (case, src, dst) groups run, pure logic
// kept apart from the measuring so it can be tested without devices.
#include <vector>

#include "family/copy/copy_bench.hpp"

namespace xb {

enum class Flow { uni, bidir, local };  // local: same-device reference of p2p

struct CopyGroup {
  CopyCase kase;
  Flow flow = Flow::uni;
  int src = -1;  // device ids; -1 is the host
  int dst = -1;
  const std::vector<Bytes>* sizes = nullptr;
  int iters = 1;
  std::string label() const;  // "p2p 0->1", "h2d host->0", ...
  // Case name in records: "h2d", "p2p", "p2p_bidir", "p2p_local".
  const char* record_case() const;
  // Bytes that must be allocated at once for `bytes` per copy.
  Bytes footprint(Bytes bytes) const;
};

// Expands the config over `ndevices` devices.
std::vector<CopyGroup> plan_copy(const CopyConfig& cfg, int ndevices);

}  // namespace xb
