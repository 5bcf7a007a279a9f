#include "backend/backend.hpp"

#include <fmt/format.h>

#include "backend/host/host_backend.hpp"
#include "core/error.hpp"

namespace xb {

const char* to_string(MemKind k) {
  switch (k) {
    case MemKind::device:
      return "device";
    case MemKind::pinned:
      return "pinned";
    case MemKind::pageable:
      return "pageable";
  }
  return "?";
}

const char* to_string(Method m) { return m == Method::dma ? "dma" : "core"; }

std::vector<BackendStatus> probe_backends() {
  return {
      {"host", true, ""},
      {"cuda", false, "not built: this binary was configured without the CUDA backend"},
      {"ascend", false, "not built: the Ascend backend is not part of this version"},
  };
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "auto") {
    for (const auto& b : probe_backends())
      if (b.available) return make_backend(b.name);
  }
  if (name == "host") return make_host_backend();
  for (const auto& b : probe_backends())
    if (b.name == name)
      throw UsageError(fmt::format("backend '{}' is not available: {}", name, b.reason));
  throw UsageError(fmt::format("unknown backend '{}' (known: host, cuda, ascend, auto)", name));
}

}  // namespace xb
