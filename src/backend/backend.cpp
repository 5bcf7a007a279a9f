#include "backend/backend.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/host/host_backend.hpp"
#include "core/error.hpp"
#ifdef XFERBENCH_HAVE_CUDA
#include "backend/cuda/cuda_backend.hpp"
#endif

namespace xb {

const char* to_string(Method m) { return m == Method::dma ? "dma" : "core"; }

void check_range(const Buffer& b, Bytes offset, Bytes n, const char* what) {
  if (offset > b.size() || n > b.size() - offset)
    throw RuntimeError(
        fmt::format("{} of {} B at offset {} outside its {} B buffer", what, n, offset, b.size()));
}

void check_ops(std::span<const CopyOp> ops) {
  for (const auto& op : ops)
    if (!op.src || !op.dst || op.bytes > op.src->size() || op.bytes > op.dst->size())
      throw RuntimeError("copy larger than its buffers");
}

int executing_device(const CopyOp& op) {
  if (op.src->device() >= 0) return op.src->device();
  return std::max(op.dst->device(), 0);
}

bool any_peer_pair(std::span<const Support> matrix, std::size_t n) {
  for (std::size_t i = 0; i < matrix.size(); ++i)
    if (matrix[i].ok && i / n != i % n) return true;
  return false;
}

std::string Backend::export_buffer(const Buffer&) {
  throw NotSupported(
      fmt::format("the {} backend cannot share device memory between processes", name()));
}

std::unique_ptr<Buffer> Backend::import_buffer(const std::string&, int, Bytes) {
  throw NotSupported(
      fmt::format("the {} backend cannot share device memory between processes", name()));
}

std::unique_ptr<Communicator> Backend::communicator(Runtime&) {
  throw UsageError(fmt::format("the {} backend has no collective library in this build", name()));
}

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

}  // namespace xb
