#include "backend/select/select.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <xferbench/version.hpp>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/cuda_module.hpp"
#include "backend/host/host_backend.hpp"
#include "core/error.hpp"

namespace xb {
namespace {

std::string exe_dir() {
  char self[PATH_MAX] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return ".";
  std::string p(self, static_cast<std::size_t>(len));
  return p.substr(0, p.rfind('/'));
}

CudaModuleLoad load_cuda_module() {
  CudaModuleLoad l;
  std::vector<std::string> tried;
  if (const char* env = std::getenv("XFERBENCH_CUDA_MODULE"); env && *env) {
    tried.emplace_back(env);
  } else {
    const std::string dir = exe_dir();
    tried = {dir + "/" + kCudaModuleFile, dir + "/" + kModuleDirFromBin + "/" + kCudaModuleFile};
  }
  for (const auto& p : tried)
    if (access(p.c_str(), F_OK) == 0) {
      l.path = p;
      break;
    }
  if (l.path.empty()) {
    l.why = fmt::format(
        "not built or not installed: no {} (the CUDA backend's module) at {} (configure with nvcc "
        "and NCCL, or install the cuda package)",
        kCudaModuleFile, fmt::join(tried, " or "));
    return l;
  }
  // RTLD_LOCAL: CUDA's and NCCL's symbols stay the module's own.
  void* h = dlopen(l.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    l.why = fmt::format("{} does not load: {}", l.path, e ? e : "dlopen failed");
    return l;
  }
  using Entry = const CudaModule* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(h, kCudaModuleSymbol));
  const CudaModule* m = entry ? entry() : nullptr;
  if (!m) {
    l.why = fmt::format("{} is not an xferbench CUDA module (no {})", l.path, kCudaModuleSymbol);
    dlclose(h);
    return l;
  }
  if (std::strcmp(m->abi, kBuildAbi) != 0) {
    l.why = fmt::format("{} is of another build ({}) than this binary ({}): install them together",
                        l.path, m->abi, kBuildAbi);
    dlclose(h);
    return l;
  }
  l.module = m;  // never closed: the backend's objects live until exit
  return l;
}

}  // namespace

const CudaModuleLoad& cuda_module() {
  static const CudaModuleLoad l = load_cuda_module();
  return l;
}

// `auto` prefers an accelerator, then the host.
std::vector<BackendStatus> probe_backends() {
  std::vector<BackendStatus> out;
  for (const char* name : {"cuda", "ascend", "host"})
    for (auto& s : probe_backend(name)) out.push_back(std::move(s));
  return out;
}

std::vector<BackendStatus> probe_backend(const std::string& name) {
  if (name == "host") return {{"host", true, ""}};
  if (name == "ascend") return {probe_ascend()};
  if (name != "cuda") return {};
  const CudaModuleLoad& cuda = cuda_module();
  return {cuda.module ? cuda.module->probe() : BackendStatus{"cuda", false, cuda.why}};
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "auto") {
    for (const auto& b : probe_backends())
      if (b.available) return make_backend(b.name);
  }
  if (name == "host") return make_host_backend();
  if (name == "ascend") return make_ascend_backend();
  if (name == "cuda" && cuda_module().module) return cuda_module().module->make();
  for (const auto& b : probe_backends())
    if (b.name == name)
      throw UsageError(fmt::format("backend '{}' is not available: {}", name, b.reason));
  throw UsageError(fmt::format("unknown backend '{}' (known: host, cuda, ascend, auto)", name));
}

void finish_backends() { finish_ascend(); }

}  // namespace xb
