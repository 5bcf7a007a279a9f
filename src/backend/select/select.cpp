#include "backend/select/select.hpp"

#include <fmt/format.h>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/host/host_backend.hpp"
#include "core/error.hpp"
#ifdef XFERBENCH_HAVE_CUDA
#include "backend/cuda/cuda_backend.hpp"
#endif

namespace xb {

// `auto` prefers an accelerator, then the host.
std::vector<BackendStatus> probe_backends() {
  std::vector<BackendStatus> out;
#ifdef XFERBENCH_HAVE_CUDA
  out.push_back(probe_cuda());
#else
  out.push_back({"cuda", false,
                 "not built: configured without the CUDA backend (XFERBENCH_WITH_CUDA=OFF or no "
                 "nvcc/NCCL at configure time)"});
#endif
  out.push_back(probe_ascend());
  out.push_back({"host", true, ""});
  return out;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "auto") {
    for (const auto& b : probe_backends())
      if (b.available) return make_backend(b.name);
  }
  if (name == "host") return make_host_backend();
  if (name == "ascend") return make_ascend_backend();
#ifdef XFERBENCH_HAVE_CUDA
  if (name == "cuda") return make_cuda_backend();
#endif
  for (const auto& b : probe_backends())
    if (b.name == name)
      throw UsageError(fmt::format("backend '{}' is not available: {}", name, b.reason));
  throw UsageError(fmt::format("unknown backend '{}' (known: host, cuda, ascend, auto)", name));
}

void finish_backends() { finish_ascend(); }

}  // namespace xb
